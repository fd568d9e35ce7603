/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and says where the time went: self time per
 * category (library or module group) and inclusive time of named functions, each per
 * operation. The benchmarks profile the broker in a separate pass after measuring, so
 * a missed target names the code that limits it, measured in the same run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** [label, test on "functionName url"] in order; the first match takes the sample. */
export type Categories = readonly (readonly [string, RegExp])[];

export const BROKER_CATEGORIES: Categories = [
  ['idle', /^\(idle\) /],
  ['GC', /^\(garbage collector\) /],
  [
    'XML parsing (broker/nextcloud/xml.ts, multistatus.ts)',
    /fast-xml-parser|path-expression-matcher|nextcloud\/multistatus|nextcloud\/xml/,
  ],
  ['Nextcloud client (HTTP to Nextcloud)', /broker\/nextcloud\//],
  ['audit log (append: write + fsync, checkpoint, sha256)', /broker\/audit\//],
  ['SQLite (grant store)', /better-sqlite3|broker\/grants\//],
  [
    'MCP SDK + Ajv + hono adapter (incl. writing the answer)',
    /@modelcontextprotocol|\/ajv\/|@hono|fast-uri|json-schema-traverse/,
  ],
  ['zod', /\/zod\//],
  [
    'express / router / body parsing',
    /\/express\/|\/router\/|body-parser|raw-body|iconv-lite|surfaces\/http\//,
  ],
  ['other broker code', /\/broker\//],
];

/** Native leaf functions that are system calls (their time is kernel work). */
const SYSCALLS =
  /^(writev|writeBuffer|writeUtf8String|writeLatin1String|fsync|close|openFileHandle|read|rename|fstat) $/;

function load(dir: string): CpuProfile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile);
}

export interface ProfileSummary {
  /**
   * ms of self time per category, per operation (idle excluded). A sample counts for
   * the nearest frame, from the sampled function outwards, that matches a category, so
   * a system call made by the audit log counts for the audit log.
   */
  perCategory: { label: string; ms: number }[];
  busyMs: number;
  /** Of `busyMs`, time in system calls (socket and file writes, fsync, open, close). */
  syscallMs: number;
  /** Inclusive ms per operation of each named function (first match of its pattern). */
  inclusive: { label: string; ms: number }[];
}

/**
 * Summarises the largest profile in `dir` (the main thread) over `operations` calls.
 * `named`: [label, pattern on "functionName url"] whose inclusive time is reported.
 */
export function summariseProfile(
  dir: string,
  operations: number,
  categories: Categories,
  named: readonly (readonly [string, RegExp])[],
): ProfileSummary {
  const profiles = load(dir).sort((a, b) => b.samples.length - a.samples.length);
  const p = profiles[0];
  if (p === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const key = (n: ProfileNode): string => `${n.callFrame.functionName} ${n.callFrame.url}`;
  const cat = new Map<string, number>();
  const incl = new Map<string, number>();
  let syscallUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    if (SYSCALLS.test(key(node))) syscallUs += us;
    let label: string | undefined;
    const hit = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur);
      if (n === undefined) break;
      label ??= categories.find(([, re]) => re.test(key(n)))?.[0];
      for (const [label2, re] of named) if (re.test(key(n))) hit.add(label2);
    }
    label ??= 'node internals and other libraries';
    cat.set(label, (cat.get(label) ?? 0) + us);
    for (const label2 of hit) incl.set(label2, (incl.get(label2) ?? 0) + us);
  }
  const perOp = (us: number): number => us / 1000 / operations;
  const perCategory = [...cat]
    .filter(([label]) => label !== 'idle')
    .map(([label, us]) => ({ label, ms: perOp(us) }))
    .sort((a, b) => b.ms - a.ms);
  return {
    perCategory,
    busyMs: perCategory.reduce((sum, c) => sum + c.ms, 0),
    syscallMs: perOp(syscallUs),
    inclusive: named.map(([label]) => ({ label, ms: perOp(incl.get(label) ?? 0) })),
  };
}

export function describeSummary(s: ProfileSummary, top = 7): string {
  const cats = s.perCategory
    .slice(0, top)
    .map((c) => `${c.label} ${c.ms.toFixed(2)}`)
    .join('; ');
  const named = s.inclusive.map((c) => `${c.label} ${c.ms.toFixed(2)}`).join('; ');
  return `${s.busyMs.toFixed(2)} ms of broker CPU per call (${s.syscallMs.toFixed(2)} ms of it in system calls: socket and file writes, fsync, open/close) — by where it is spent: ${cats}.${named === '' ? '' : ` Inclusive: ${named} (ms per call).`}`;
}

/** The functions with the most self time (idle excluded), in ms, with their module. */
export function topFunctions(dir: string, n: number): { name: string; ms: number }[] {
  const p = load(dir).sort((a, b) => b.samples.length - a.samples.length)[0];
  if (p === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  const byId = new Map(p.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined || node.callFrame.functionName === '(idle)') return;
    const module = node.callFrame.url.replace(
      /^.*node_modules\/(?:\.cache\/broker-bench-dist\/)?/,
      '',
    );
    const name = `${node.callFrame.functionName || '(anonymous)'}${module === '' ? '' : ` (${module})`}`;
    self.set(name, (self.get(name) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  });
  return [...self]
    .map(([name, ms]) => ({ name, ms }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n);
}
