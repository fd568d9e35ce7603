/**
 * docs/contracts.md (and the tool counts wherever the documents give one) against the
 * code: the tools in §5 against the two tool registries, the exit codes in §6 (and in
 * docs/clients.md) against the CLI's ExitCode, the keys in §7 against the config schema
 * walked from zod. Each failure names the document line and the code entry that differ.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTools, type AgentToolDeps } from '../../broker/surfaces/agent/index.js';
import type { ToolDefinition } from '../../broker/surfaces/tool.js';
import { transferTools, type TransferToolDeps } from '../../broker/surfaces/transfer/index.js';
import { ExitCode } from '../../cli/command.js';
import { leafKeys, schemaKeys } from './schema-keys.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A document's lines, numbered from 1 (`where` gives `docs/x.md:12`). */
interface Line {
  readonly doc: string;
  readonly n: number;
  readonly text: string;
}
const where = (l: Line): string => `${l.doc}:${l.n}`;

function lines(doc: string): Line[] {
  return readFileSync(join(ROOT, doc), 'utf8')
    .split('\n')
    .map((text, i) => ({ doc, n: i + 1, text }));
}

/** The lines from the heading starting with `from` to the next heading of its level or above. */
export function section(all: readonly Line[], from: string): Line[] {
  const start = all.findIndex((l) => l.text.startsWith(from));
  if (start < 0) throw new Error(`${all[0]?.doc ?? '?'} has no heading "${from}"`);
  const level = /^#+/.exec(from)?.[0].length ?? 2;
  const end = all.findIndex(
    (l, i) => i > start && /^#+ /.test(l.text) && (/^#+/.exec(l.text)?.[0].length ?? 9) <= level,
  );
  return all.slice(start, end < 0 ? undefined : end);
}

/** Table rows (not the header or its rule) as their cells. */
function rows(part: readonly Line[]): { line: Line; cells: string[] }[] {
  const table = part.filter((l) => l.text.startsWith('|'));
  return table
    .filter(
      (l, i) => !/^\|[\s|:-]+\|$/.test(l.text) && !/^\|[\s|:-]+\|$/.test(table[i + 1]?.text ?? ''),
    )
    .map((line) => ({
      line,
      cells: line.text
        .replace(/\\\|/g, '¦')
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    }));
}

const spans = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');

// Registration reads no dependency (only the handlers, never called here, would).
const AGENT = agentTools({ instances: new Map() } as unknown as AgentToolDeps).all();
const TRANSFER = transferTools({} as unknown as TransferToolDeps).all();
const CONTRACTS = lines('docs/contracts.md');

describe('docs/contracts.md §5: the tools', () => {
  const agentPart = section(CONTRACTS, '### The agent surface');
  const documented = rows(agentPart)
    .map(({ line, cells }) => ({
      line,
      name: /^`([a-z_]+)`$/.exec(cells[0] ?? '')?.[1],
      args: cells[1] ?? '',
    }))
    .filter((r): r is { line: Line; name: string; args: string } => r.name !== undefined);

  it('the agent tables list exactly the registered agent tools', () => {
    for (const row of documented) {
      expect(
        AGENT.map((t) => t.name),
        `${where(row.line)}: \`${row.name}\` is not an agent tool (broker/surfaces/agent/)`,
      ).toContain(row.name);
    }
    for (const tool of AGENT) {
      expect(
        documented.map((r) => r.name),
        `agent tool ${tool.name} (broker/surfaces/agent/) has no row in docs/contracts.md "The agent surface"`,
      ).toContain(tool.name);
    }
  });

  it.each(AGENT.map((t) => ({ name: t.name, tool: t })))(
    '$name: every argument is documented, `?` exactly on the optional ones',
    ({ name, tool }) => {
      const row = documented.find((r) => r.name === name);
      expect(row, `no row for ${name}`).toBeDefined();
      const written = new Map(
        spans(row?.args ?? '')
          .map((s) => /^([a-z_]+)(\?)?(?::|$)/.exec(s))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => [m[1] ?? '', m[2] === '?'] as const),
      );
      for (const [arg, optional] of argumentsOf(tool)) {
        const at = `${row === undefined ? 'docs/contracts.md' : where(row.line)}: ${name}'s argument ${arg}`;
        expect(written.has(arg), `${at} is not documented`).toBe(true);
        expect(
          written.get(arg),
          `${at} is ${optional ? 'optional' : 'required'} in its schema`,
        ).toBe(optional);
      }
    },
  );

  it('the transfer surface names exactly the registered transfer tools', () => {
    const part = section(CONTRACTS, '### The transfer surface');
    const line = part.find((l) => l.text.startsWith('Tools '));
    expect(line, 'docs/contracts.md "The transfer surface" has no "Tools …" line').toBeDefined();
    const named = spans(line?.text ?? '');
    expect(
      named,
      `${line === undefined ? '' : where(line)} against broker/surfaces/transfer/`,
    ).toEqual(TRANSFER.map((t) => t.name));
  });
});

function argumentsOf(tool: ToolDefinition): [string, boolean][] {
  const schema = z.toJSONSchema(tool.input, { io: 'input' }) as {
    properties?: Record<string, unknown>;
    required?: string[];
  };
  const required = new Set(schema.required ?? []);
  return Object.keys(schema.properties ?? {}).map((arg) => [arg, !required.has(arg)]);
}

const NUMBER_WORDS = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
  'twenty',
];

/**
 * "Eight tools", "(8 tools)", "the twelve agent tools": a count of a surface's tools, on
 * any line of a document; the transfer surface's when "transfer" comes before it on its
 * line, else the agent's.
 */
export function toolCounts(
  doc: readonly Line[],
): { line: Line; count: number; surface: 'agent' | 'transfer' }[] {
  const text = doc.map((l) => l.text).join('\n');
  const starts: number[] = [];
  for (let i = 0, at = 0; i < doc.length; i += 1) {
    starts.push(at);
    at += (doc[i]?.text.length ?? 0) + 1;
  }
  const count = new RegExp(
    // Not a named subset ("the four tools `collections`, …"): that names its tools.
    `\\b(\\d+|${NUMBER_WORDS.join('|')})\\s+(?:(agent|transfer|MCP)\\s+)?tools\\b(?!\\s+\`)`,
    'gi',
  );
  return [...text.matchAll(count)].map((m) => {
    const index = m.index;
    const lineNo = starts.findLastIndex((s) => s <= index);
    const line = doc[lineNo] as Line;
    const before = line.text.slice(0, index - (starts[lineNo] ?? 0));
    const word = (m[1] ?? '').toLowerCase();
    const n = /^\d+$/.test(word) ? Number(word) : NUMBER_WORDS.indexOf(word);
    const surface =
      m[2]?.toLowerCase() === 'transfer' || /transfer/i.test(before) ? 'transfer' : 'agent';
    return { line, count: n, surface };
  });
}

describe('tool counts in the documents', () => {
  const counts = [
    'README.md',
    'docs/clients.md',
    'docs/architecture.md',
    'docs/contracts.md',
    'docs/runbook.md',
    'docs/user-guide.md',
    'SECURITY.md',
  ].flatMap((doc) => toolCounts(lines(doc)));

  it('are found (the check is not vacuous)', () => {
    expect(counts.filter((c) => c.surface === 'agent').length).toBeGreaterThan(3);
    expect(counts.filter((c) => c.surface === 'transfer').length).toBeGreaterThan(0);
  });

  it.each(counts.map((c) => ({ at: where(c.line), ...c })))(
    '$at: $count $surface tools',
    ({ line, count, surface }) => {
      const registered = surface === 'agent' ? AGENT : TRANSFER;
      expect(
        count,
        `${where(line)} says ${count} ${surface} tools ("${line.text.trim()}"); broker/surfaces/${surface}/ registers ${registered.length}`,
      ).toBe(registered.length);
    },
  );
});

describe('exit codes: docs/contracts.md §6 and docs/clients.md against cli/command.ts', () => {
  /** What each ExitCode's meaning must say in docs/contracts.md. */
  const MEANING: Record<keyof typeof ExitCode, RegExp> = {
    ok: /\bok\b/,
    usage: /usage/,
    infrastructure: /infrastructure/,
    refused: /refused/,
    verification: /verification/,
    clobber: /clobber/,
  };
  const tables = [
    { doc: 'docs/contracts.md', part: section(CONTRACTS, '### Exit codes') },
    {
      doc: 'docs/clients.md',
      part: lines('docs/clients.md').filter((l) => /^\|\s*(exit|\d+)\s*\|/.test(l.text)),
    },
  ];

  it.each(tables)('$doc lists exactly the codes of ExitCode', ({ doc, part }) => {
    const codes = rows(part)
      .map(({ line, cells }) => ({ line, code: Number(cells[0]), meaning: cells[1] ?? '' }))
      .filter((r) => Number.isInteger(r.code));
    const known: number[] = Object.values(ExitCode);
    for (const row of codes) {
      expect(
        known,
        `${where(row.line)}: exit ${row.code} is not in ExitCode (cli/command.ts)`,
      ).toContain(row.code);
    }
    for (const [name, code] of Object.entries(ExitCode)) {
      expect(
        codes.map((r) => r.code),
        `ExitCode.${name} = ${code} (cli/command.ts) has no row in ${doc}'s exit code table`,
      ).toContain(code);
    }
    if (doc !== 'docs/contracts.md') return;
    for (const [name, code] of Object.entries(ExitCode)) {
      const row = codes.find((r) => r.code === code);
      expect(
        row?.meaning,
        `${row === undefined ? doc : where(row.line)}: exit ${code} is ExitCode.${name}`,
      ).toMatch(MEANING[name as keyof typeof ExitCode]);
    }
  });
});

describe('docs/contracts.md §7 against the config schema', () => {
  const part = section(CONTRACTS, '## 7. Configuration');
  const keys = schemaKeys();
  const documented = rows(part).flatMap(({ line, cells }) =>
    spans(cells[0] ?? '').map((key) => ({ line, key })),
  );
  const text = part.map((l) => l.text).join('\n');

  it('are found (the check is not vacuous)', () => {
    expect(documented.length).toBeGreaterThan(15);
    expect(keys.size).toBeGreaterThan(25);
  });

  it.each(documented.map((d) => ({ at: where(d.line), ...d })))(
    '$at: `$key` is a key of the schema',
    ({ line, key }) => {
      expect(
        keys.has(key),
        `${where(line)}: \`${key}\` is not a key of the config schema (broker/config/schema.ts)`,
      ).toBe(true);
    },
  );

  it.each(leafKeys(keys))('%s (broker/config/schema.ts) is documented in §7', (key) => {
    const row = documented.find((d) => d.key === key || key.startsWith(`${d.key}.`));
    expect(
      row,
      `${key} (broker/config/schema.ts) has no row in docs/contracts.md §7`,
    ).toBeDefined();
    const last = key.split('.').at(-1) ?? key;
    expect(text, `${key}: docs/contracts.md §7 never names \`${last}\``).toContain(last);
  });
});

describe('the checks themselves', () => {
  const line = (text: string): Line[] =>
    text.split('\n').map((t, i) => ({ doc: 'x.md', n: i + 1, text: t }));

  it('count tools in words and digits, across a line break, by surface', () => {
    const found = toolCounts(
      line(
        'the agent surface (8 tools) and\nthe transfer surface has five\ntools. Eight\ntools, none …',
      ),
    ).map((c) => [c.line.n, c.count, c.surface]);
    expect(found).toEqual([
      [1, 8, 'agent'],
      [2, 5, 'transfer'],
      [3, 8, 'agent'],
    ]);
  });

  it('walk the schema into keys, secrets once, instances by <name>', () => {
    const keys = schemaKeys();
    expect(keys.has('tokens.agent')).toBe(true);
    expect(keys.has('tokens.agent_env')).toBe(false);
    expect(keys.has('instances.<name>.app_password')).toBe(true);
    expect(keys.has('lifecycle.max_grant')).toBe(true);
  });
});
