/**
 * The documents must describe the code as it is: links resolve, every `broker <command>`
 * they show exists, every config key they name is in config.yaml.example, and the agent
 * tools listed in docs/clients.md are exactly the ones the agent surface registers, with
 * the same arguments. A doc that drifts from the code fails here, not in a user's hands.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { CHECKPOINT_FILE, LOCK_FILE, LOG_FILE } from '../../broker/audit/index.js';
import { agentTools, type AgentToolDeps } from '../../broker/surfaces/agent/index.js';
import { commands } from '../../cli/main.js';
import { schemaKeys } from './schema-keys.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** README.md and every docs/*.md, as [repository-relative name, text]. */
const DOCUMENTS: ReadonlyMap<string, string> = new Map(
  [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ].map((name) => [name, readFileSync(join(ROOT, name), 'utf8')]),
);

/**
 * Links that deliberately point outside the repository, each named; any other link that
 * leaves the repository fails. There are none: a clone stands alone.
 */
const OUTSIDE_REPOSITORY: ReadonlySet<string> = new Set<string>();

interface Parsed {
  /** Text outside fenced code blocks, with line structure kept. */
  prose: string;
  /** Lines inside fenced code blocks. */
  codeLines: string[];
  /** Inline code spans in the prose. */
  spans: string[];
  /** Heading anchors as GitHub generates them. */
  anchors: Set<string>;
}

/** GitHub's heading slug: lower case, punctuation and emoji dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

function parseMarkdown(text: string): Parsed {
  const prose: string[] = [];
  const codeLines: string[] = [];
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) {
      fence = marker;
      continue;
    }
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined;
      else codeLines.push(line);
      continue;
    }
    prose.push(line);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
  }
  const proseText = prose.join('\n');
  // Inline code may wrap onto the next line; a blank line ends a paragraph (and a span).
  const spans = [...proseText.matchAll(/(`+)((?:(?!\1)[^\n]|\n(?!\s*\n))+?)\1/g)].map((m) =>
    (m[2] ?? '').replace(/\s*\n\s*/g, ' ').trim(),
  );
  return { prose: proseText, codeLines, spans, anchors };
}

const PARSED: ReadonlyMap<string, Parsed> = new Map(
  [...DOCUMENTS].map(([name, text]) => [name, parseMarkdown(text)]),
);

function parsedOf(name: string): Parsed {
  const p = PARSED.get(name);
  if (p === undefined) {
    const text = readFileSync(join(ROOT, name), 'utf8');
    return parseMarkdown(text);
  }
  return p;
}

/** Every link target in the prose: inline `[text](target)` and `[ref]: target` definitions. */
function linkTargets(prose: string): string[] {
  const withoutSpans = prose.replace(/`[^`\n]*`/g, '');
  const inline = [...withoutSpans.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
  const defs = [...withoutSpans.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)];
  return [...inline, ...defs].map((m) => m[1] ?? '');
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

describe('documents', () => {
  it('include the four guides besides the README', () => {
    for (const name of [
      'docs/architecture.md',
      'docs/user-guide.md',
      'docs/runbook.md',
      'docs/clients.md',
    ]) {
      expect(DOCUMENTS.has(name), name).toBe(true);
    }
  });
});

describe('relative links', () => {
  const cases = [...PARSED].flatMap(([name, parsed]) =>
    linkTargets(parsed.prose)
      .filter((t) => !isExternal(t))
      .map((target) => ({ name, target })),
  );

  it('are found (the check is not vacuous)', () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  it.each(cases)(
    '$name -> $target resolves to an existing file and heading',
    ({ name, target }) => {
      const [pathPart = '', anchor] = target.split('#', 2);
      const file = pathPart === '' ? join(ROOT, name) : resolve(ROOT, dirname(name), pathPart);
      const inside = file === ROOT || file.startsWith(ROOT + sep);
      if (!inside) {
        expect(
          OUTSIDE_REPOSITORY.has(`${name} -> ${target}`),
          `${target} leaves the repository`,
        ).toBe(true);
        return;
      }
      expect(existsSync(file), `${target} (from ${name}) does not exist`).toBe(true);
      if (anchor !== undefined && anchor !== '') {
        const rel = relative(ROOT, file).split(sep).join('/');
        expect(
          statSync(file).isFile() && rel.endsWith('.md'),
          `${target}: anchor on a non-document`,
        ).toBe(true);
        expect([...parsedOf(rel).anchors], `${target}: no heading #${anchor} in ${rel}`).toContain(
          anchor,
        );
      }
    },
  );
});

/**
 * `broker <command>` where `broker` starts a shell command: at the start of a code span or
 * line, after `&&`, `;`, `|`, `$(`, optionally behind `sudo -u USER`, `npx [options]` or
 * `node …/bin/broker.js` (or `"$NODE" …/bin/broker.js`, the runbook's install Node).
 * (`claude mcp add … broker http://…` names an MCP server, not a command, and is not
 * matched.)
 */
const COMMAND_USE =
  /(?:^|&&|;|\||\$\()\s*(?:\$\s+)?(?:sudo\s+-u\s+\S+\s+)?(?:npx\s+(?:-\S+\s+)*)?(?:(?:node|"\$NODE")\s+\S*bin\/broker\.js|broker)\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?/g;

/** Sub-commands of commands that take one. */
const SUB_COMMANDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['audit', ['verify', 'tail']],
]);

function commandUses(): { doc: string; command: string; sub: string | undefined; text: string }[] {
  return [...PARSED].flatMap(([doc, parsed]) =>
    [...parsed.spans, ...parsed.codeLines].flatMap((text) =>
      [...text.matchAll(COMMAND_USE)].map((m) => ({
        doc,
        command: m[1] ?? '',
        sub: m[2],
        text: text.trim(),
      })),
    ),
  );
}

describe('broker commands in the documents', () => {
  // `help` and `completion` are answered by every entry point (cli/dispatch.ts).
  const known = new Set([...commands.map((c) => c.name), 'help', 'completion']);
  const uses = commandUses();

  it('are found (the check is not vacuous)', () => {
    expect(uses.length).toBeGreaterThan(20);
  });

  it.each(uses)('$doc: `$text` names an existing command', ({ command, sub }) => {
    expect([...known]).toContain(command);
    const subs = SUB_COMMANDS.get(command);
    if (subs !== undefined) expect(subs).toContain(sub);
  });

  it('cover every command of the CLI', () => {
    const documented = new Set(uses.map((u) => u.command));
    for (const name of known)
      expect([...documented], `broker ${name} is undocumented`).toContain(name);
  });
});

const EXAMPLE_TEXT = readFileSync(join(ROOT, 'config.yaml.example'), 'utf8');

/** Config key paths of config.yaml.example, with `instances.<name>` for any instance. */
function exampleKeys(): { keys: Set<string>; topLevel: Set<string> } {
  const doc = parse(readFileSync(join(ROOT, 'config.yaml.example'), 'utf8')) as Record<
    string,
    unknown
  >;
  const keys = new Set<string>();
  const walk = (value: unknown, path: string[]): void => {
    if (path.length > 0) keys.add(path.join('.'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
    for (const [k, v] of Object.entries(value)) {
      const seg = path.length === 1 && path[0] === 'instances' ? '<name>' : k;
      walk(v, [...path, seg]);
    }
  };
  walk(doc, []);
  return { keys, topLevel: new Set(Object.keys(doc)) };
}

/** Files in data_dir whose names read like keys of the `audit` section. */
const DATA_FILES = new Set([LOG_FILE, CHECKPOINT_FILE, LOCK_FILE]);

describe('config keys in the documents', () => {
  const { keys, topLevel } = exampleKeys();
  const mentions = [...PARSED].flatMap(([doc, parsed]) =>
    parsed.spans.flatMap((span) =>
      [...span.matchAll(/(?<![\w.$/-])([a-z_]+(?:\.(?:[a-z_]+|<name>|\*))+)(?![\w-]*\()/g)]
        .map((m) => m[1] ?? '')
        .filter((key) => topLevel.has(key.split('.')[0] ?? '') && !DATA_FILES.has(key))
        .map((key) => ({ doc, key })),
    ),
  );

  it('are found (the check is not vacuous)', () => {
    expect(mentions.length).toBeGreaterThan(20);
  });

  it.each(mentions)('$doc: `$key` is in config.yaml.example', ({ key }) => {
    const normal = key.replace(/\.\*(?=\.|$)/g, '.<name>');
    // A secret may be written as key, key_file or key_env; the example uses one form.
    const base = normal.replace(/_(?:file|env)$/, '');
    const forms = [base, `${base}_file`, `${base}_env`];
    // An optional key the example shows commented out (`# metrics_env: …`, or a mapping
    // `# retention:` with its keys commented below it) counts when the schema has it.
    const last = base.split('.').at(-1) ?? base;
    const commented =
      schemaKeys().has(base) &&
      new RegExp(`^\\s*#\\s+${last}(?:_file|_env)?:(?: |$)`, 'm').test(EXAMPLE_TEXT);
    expect(
      forms.some((f) => keys.has(f)) || commented,
      `${key} is not a key of config.yaml.example`,
    ).toBe(true);
  });
});

describe('the agent tools in docs/clients.md', () => {
  // Registration reads no dependency (only the handlers, never called here, would).
  const registered = agentTools({
    instances: new Map(),
  } as unknown as AgentToolDeps).all();

  const section = (() => {
    const text = DOCUMENTS.get('docs/clients.md') ?? '';
    const start = text.indexOf('## The twelve agent tools');
    // The tools table comes before the first sub-heading (### The envelope).
    const end = text.slice(start + 1).search(/\n##/);
    return text.slice(start, end < 0 ? undefined : start + 1 + end);
  })();
  const rows = section
    .split('\n')
    .map((line) => /^\|\s*`([a-z_]+)`\s*\|([^|]*)\|/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({
      name: m[1] ?? '',
      args: [...(m[2] ?? '').matchAll(/`([a-z_]+)(\?)?`/g)].map((a) => ({
        name: a[1] ?? '',
        optional: a[2] === '?',
      })),
    }));

  it('are exactly the registered tools, twelve of them', () => {
    expect(registered).toHaveLength(12);
    expect(rows.map((r) => r.name).sort()).toEqual(registered.map((t) => t.name).sort());
  });

  it.each(registered.map((t) => ({ name: t.name, tool: t })))(
    '$name: the documented arguments and their optionality match the input schema',
    ({ name, tool }) => {
      const schema = z.toJSONSchema(tool.input, { io: 'input' }) as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      const required = new Set(schema.required ?? []);
      const expected = Object.keys(schema.properties ?? {})
        .map((arg) => ({ name: arg, optional: !required.has(arg) }))
        .sort((a, b) => a.name.localeCompare(b.name));
      const row = rows.find((r) => r.name === name);
      expect(row, `${name} has no row`).toBeDefined();
      expect([...(row?.args ?? [])].sort((a, b) => a.name.localeCompare(b.name))).toEqual(expected);
    },
  );
});

describe('the checks themselves', () => {
  it('slug headings as GitHub does', () => {
    expect(slug("The CLI on the agent's host")).toBe('the-cli-on-the-agents-host');
    expect(slug('Back up `data_dir`')).toBe('back-up-data_dir');
    expect(slug('2. Nextcloud: trash bin and file locking')).toBe(
      '2-nextcloud-trash-bin-and-file-locking',
    );
    expect(slug('403 Host not allowed')).toBe('403-host-not-allowed');
  });

  it('find broker commands only where they start a shell command', () => {
    const found = (text: string): string[] =>
      [...text.matchAll(COMMAND_USE)].map((m) => m[1] ?? '');
    expect(found('broker fetch personal:a.txt')).toEqual(['fetch']);
    expect(found('$ npx broker frobnicate')).toEqual(['frobnicate']);
    expect(found('cd x && sudo -u broker node /opt/b/bin/broker.js doctor --config c')).toEqual([
      'doctor',
    ]);
    expect(found('sudo -u broker "$NODE" /opt/b/bin/broker.js revoke all')).toEqual(['revoke']);
    expect(found('claude mcp add --transport http broker http://h:8765/mcp')).toEqual([]);
    expect(found('the broker refuses to start')).toEqual([]);
  });

  it('take link targets from prose, not from code', () => {
    const parsed = parseMarkdown(
      'See [a](docs/a.md#x) and `[b](not-a-link.md)`.\n\n```md\n[c](in-code.md)\n```\n[d]: ref.md\n',
    );
    expect(linkTargets(parsed.prose)).toEqual(['docs/a.md#x', 'ref.md']);
  });
});
