/**
 * The statements a reader acts on, held to the code: how the README and the runbook say
 * to approve (the approval mode config.yaml.example ships), and the runbook's first
 * deployment step by step: the steps are numbered in order, every configuration key its
 * YAML names exists, every secret file it names is one a step creates, every repository
 * path it names exists, and every message it tells the reader to expect is the
 * program's own words. The README once said "react 👍" in a room where reactions decide
 * nothing, and the runbook said an encrypted room "can never be used".
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MIN_NODE_MAJOR, nodeProblem } from '../../bin/node-check.js';
import { TRANSFER_TOOLS, toolListing } from '../../cli/client/mcp/tools.js';
import { DEFAULT_OUTFILE } from '../../scripts/build-cli.js';
import { NODE_RECORD } from '../../scripts/record-node.js';
import { ROOT } from '../../support/processes.js';
import { schemaKeys } from './schema-keys.js';

const read = (name: string): string => readFileSync(join(ROOT, name), 'utf8');
const README = read('README.md');
const RUNBOOK = read('docs/runbook.md');
const ARCHITECTURE = read('docs/architecture.md');
const EXAMPLE = parse(read('config.yaml.example')) as {
  approval: string;
  matrix: { encryption: string; approver_devices: string[] };
};

/** The runbook's "First deployment" steps: `### N. Title` and the text up to the next. */
const STEPS: { n: number; title: string; text: string }[] = (() => {
  const section = RUNBOOK.slice(
    RUNBOOK.indexOf('## First deployment'),
    RUNBOOK.indexOf('\n## ', RUNBOOK.indexOf('## First deployment') + 1),
  );
  return [...section.matchAll(/^### (\d+)\. (.*)\n([\s\S]*?)(?=^### |(?![\s\S]))/gm)].map((m) => ({
    n: Number(m[1]),
    title: m[2] ?? '',
    text: m[3] ?? '',
  }));
})();

const step = (n: number): string => {
  const found = STEPS.find((s) => s.n === n);
  if (found === undefined) throw new Error(`the runbook has no step ${n}`);
  return found.text;
};

describe('the approval mode the README and the runbook describe is the one the example ships', () => {
  it('config.yaml.example ships approval: matrix in an encrypted room, with a pin', () => {
    // The checks below are written for this mode; a change here must change the docs.
    expect(EXAMPLE.approval).toBe('matrix');
    expect(EXAMPLE.matrix.encryption).toBe('required');
    expect(EXAMPLE.matrix.approver_devices.length).toBeGreaterThan(0);
  });

  it.each([
    ['README.md', README],
    ['docs/runbook.md', RUNBOOK],
  ])(
    '%s names the mode and decides as it does: a poll or a typed command, no reaction',
    (_, text) => {
      expect(text).toContain('encryption: required');
      expect(text).toMatch(/\bpoll\b/);
      expect(text).toMatch(/type[sd]? `approve (N|\d+)`/);
      expect(text).toMatch(/[Rr]eactions decide nothing/);
      expect(text).not.toMatch(/\b[Rr]eact(?:s|ing)? 👍/);
      expect(text).toMatch(/pinned/);
    },
  );

  it.each([
    ['docs/runbook.md', RUNBOOK],
    ['docs/architecture.md', ARCHITECTURE],
  ])('%s never asks for an unencrypted room in this mode', (_, text) => {
    expect(text).not.toMatch(/can never be used|create a new, unencrypted|one unencrypted/);
    expect(text).not.toMatch(/must be unencrypted|and not\s+encrypted/);
  });

  it("the runbook's room check expects an encrypted room, with the algorithm rooms are created with", () => {
    const check = step(3);
    expect(check).toMatch(/rooms\/\$R\/state\/m\.room\.encryption\/" \| jq -r '\.algorithm/);
    const created = /"algorithm":"([^"]+)"/.exec(read('docs/user-guide.md'))?.[1];
    expect(created).toBe('m.megolm.v1.aes-sha2');
    expect(check).toContain(`\`${created}\` (the room is encrypted`);
    // The broker reads the same state event to decide whether the room is encrypted.
    expect(read('broker/approval/matrix/preflight.ts')).toContain("'m.room.encryption'");
  });
});

describe("the runbook's first deployment, step by step", () => {
  it('has its steps numbered 0, 1, 2, … in order', () => {
    expect(STEPS.length).toBeGreaterThan(8);
    expect(STEPS.map((s) => s.n)).toEqual(STEPS.map((_, i) => i));
  });

  it('sets up what encryption: required needs: the crypto secret and the pins', () => {
    expect(step(5)).toContain('> secrets/matrix-crypto-secret');
    expect(STEPS.find((s) => /pin/.test(s.title))?.text).toContain('approver_devices:');
  });

  it('names only configuration keys that exist, in every YAML block', () => {
    const known = schemaKeys();
    const yamlBlocks = [...RUNBOOK.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    const config = yamlBlocks.filter((b) => !/^(scrape_configs|services):/m.test(b));
    expect(config.length).toBeGreaterThanOrEqual(2);
    for (const block of config) {
      const keys: string[] = [];
      const walk = (value: unknown, path: string[]): void => {
        if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
        for (const [k, v] of Object.entries(value)) {
          const seg = path.length === 1 && path[0] === 'instances' ? '<name>' : k;
          keys.push([...path, seg.replace(/_(?:file|env)$/, '')].join('.'));
          walk(v, [...path, seg]);
        }
      };
      walk(parse(block), []);
      for (const key of keys) expect([...known], `${key} (runbook YAML)`).toContain(key);
    }
  });

  it('creates every secret file it names', () => {
    const steps = STEPS.map((s) => s.text).join('\n');
    const named = new Set(
      [...steps.matchAll(/_file: (secrets\/[a-z0-9-]+)/g)].map((m) => m[1] ?? ''),
    );
    const created = new Set([...steps.matchAll(/> (secrets\/[a-z0-9-]+)'/g)].map((m) => m[1]));
    expect(named.size).toBeGreaterThanOrEqual(2);
    for (const file of named)
      expect([...created], `${file} is named but never created`).toContain(file);
  });

  it('names only repository paths that exist, or that the build writes', () => {
    const built = new Set([relative(ROOT, NODE_RECORD), relative(ROOT, DEFAULT_OUTFILE)]);
    const paths = new Set(
      [...RUNBOOK.matchAll(/(?<![\w/.-])((?:scripts|bin|dist)\/[\w.-]+(?:\/[\w.-]+)*)/g)].map(
        (m) => m[1] ?? '',
      ),
    );
    expect(paths).toContain('dist/node.json');
    expect(paths).toContain('scripts/use-node.sh');
    for (const path of paths) {
      expect(existsSync(join(ROOT, path)) || built.has(path), `${path} does not exist`).toBe(true);
    }
  });

  /** What a step tells the reader to expect, and where the program says it. */
  const source = (file: string) => () => read(file).replaceAll('`', '');
  const EXPECTED: { step: number; quote: string; program: () => string }[] = [
    {
      step: 4,
      quote: `cannot run the broker: it needs Node.js 22, 24 or 26`,
      program: () =>
        nodeProblem({ version: `v${MIN_NODE_MAJOR - 2}.0.0`, execPath: '/usr/bin/node' }, undefined)
          ?.error ?? '',
    },
    { step: 4, quote: 'dist/ is missing; run npm ci', program: source('bin/broker.js') },
    {
      step: 5,
      quote: 'no pinned device of the approver is known to the homeserver',
      program: source('broker/doctor/matrix-devices.ts'),
    },
    { step: 6, quote: ': not pinned', program: source('broker/doctor/matrix-devices.ts') },
    {
      step: 6,
      quote: 'pinned with another key',
      program: source('broker/doctor/matrix-devices.ts'),
    },
    { step: 6, quote: 'All checks passed.', program: source('broker/doctor/checklist.ts') },
    {
      step: 7,
      quote: 'cannot run the broker: it needs Node.js 22, 24 or 26',
      program: () =>
        nodeProblem({ version: 'v20.0.0', execPath: '/usr/bin/node' }, undefined)?.error ?? '',
    },
    { step: 7, quote: 'broker listening', program: source('broker/app.ts') },
    {
      step: 7,
      quote: 'matrix approval gateway started',
      program: source('broker/approval/matrix/connection.ts'),
    },
    {
      step: 7,
      quote: 'approval gateway refused to start; fix the configuration and restart',
      program: source('broker/app.ts'),
    },
    { step: 8, quote: 'host not allowed', program: source('broker/surfaces/http/host.ts') },
    { step: 10, quote: 'Approved request', program: source('broker/approval/decisions.ts') },
  ];

  it.each(EXPECTED)('step $step: "$quote" is in the step and in what the program says', (e) => {
    expect(step(e.step).replace(/\s+/g, ' ').replaceAll('`', '')).toContain(e.quote);
    expect(e.program()).toContain(e.quote);
  });
});

describe('the secret files config.yaml.example suggests', () => {
  it('are in a folder git ignores, as config.yaml is', () => {
    const suggested = [...read('config.yaml.example').matchAll(/_file: ([\w.-]+)\//g)].map(
      (m) => m[1] ?? '',
    );
    expect(suggested).toContain('secrets');
    const ignored = read('.gitignore').split('\n');
    expect(ignored).toContain('config.yaml');
    for (const folder of new Set(suggested)) expect(ignored).toContain(`${folder}/`);
  });
});

describe('the `broker mcp` table in docs/clients.md', () => {
  // It left out fetch's `recursive`: a reader could not know the tool takes a folder.
  const text = read('docs/clients.md');
  const start = text.indexOf('## The transfer tools over MCP');
  // Up to the next heading: the annotations table below names the tools too.
  const table = text.slice(start, text.indexOf('\n#', start + 1));
  const rows = new Map(
    [...table.matchAll(/^\| `(fetch|push|checkout|checkin)` +\| ([^|]*)\|/gm)].map((m) => [
      m[1] ?? '',
      [...(m[2] ?? '').matchAll(/`([a-z_]+)`(\?)?/g)].map((a) => `${a[1]}${a[2] ?? ''}`).sort(),
    ]),
  );

  it.each(TRANSFER_TOOLS.map((t) => [t.transfer.name, t] as const))(
    "%s: the arguments and their optionality are the tool's",
    (name, tool) => {
      const schema = toolListing(tool)['inputSchema'] as {
        properties: Record<string, unknown>;
        required: string[];
      };
      const expected = Object.keys(schema.properties)
        .map((arg) => (schema.required.includes(arg) ? arg : `${arg}?`))
        .sort();
      expect(rows.get(name)).toEqual(expected);
    },
  );
});
