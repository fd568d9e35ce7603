/**
 * The wall's decision latency with 10,000 active grants, most of them on other
 * instances and paths, over a mix of allowed and refused operations. Baselines, in
 * the same run and the same loop: `canonicalPath` alone (the floor any decision pays)
 * and a bare scan of the grant list comparing only the instance.
 */
import { cpus, loadavg } from 'node:os';
import type { GrantView } from '../broker/base/domain.js';
import { canonicalPath, decide, type InstancePolicy, type WallOp } from '../broker/wall.js';
import { type Bench, percentile } from './harness.js';

const NOW = 1_700_000_000_000;
const GRANTS = 10_000;
const ROUNDS = 20;
const TARGET_P99_US = 50;

/** A deterministic generator, so every run measures the same workload. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function buildGrants(rand: () => number): GrantView[] {
  const instances = ['personal', 'work', 'family', 'archive', 'club'];
  const grants: GrantView[] = [];
  for (let i = 0; i < GRANTS; i += 1) {
    // 1 in 5 on the instance under test; the rest elsewhere. A few expired ones.
    const instance = instances[i % instances.length] as string;
    const depth = 1 + Math.floor(rand() * 3);
    const parts = Array.from(
      { length: depth },
      (_, d) => `${['Projects', 'Fotos', 'Docs', 'Rechnungen'][d % 4]}-${Math.floor(rand() * 500)}`,
    );
    grants.push({
      id: i + 1,
      requestId: Math.floor(i / 3) + 1,
      instance,
      path: parts.join('/'),
      mode: rand() < 0.5 ? 'read' : 'write',
      expiresAt: rand() < 0.05 ? NOW - 1 : NOW + 3_600_000,
    });
  }
  // The grants the allowed operations below rely on, placed at the end of the list
  // (the worst case for a scan that stops early; this one never stops early).
  grants.push(
    {
      id: GRANTS + 1,
      requestId: 9_001,
      instance: 'personal',
      path: 'Team/Q3',
      mode: 'read',
      expiresAt: NOW + 60_000,
    },
    {
      id: GRANTS + 2,
      requestId: 9_002,
      instance: 'personal',
      path: 'Team/Drafts',
      mode: 'write',
      expiresAt: NOW + 60_000,
    },
  );
  return grants;
}

function buildOps(): WallOp[] {
  const on = 'personal';
  return [
    // allowed
    { op: 'read', instance: on, path: '/Team/Q3/report.pdf' },
    { op: 'read', instance: on, path: 'Team/Drafts/Entwurf für Kunden.docx' },
    { op: 'write', instance: on, path: 'Team/Drafts/new.md' },
    { op: 'list', instance: on, path: 'Team/Q3' },
    { op: 'move', instance: on, from: 'Team/Drafts/a.md', to: 'Team/Drafts/b.md' },
    // refused: no grant, sibling, wrong mode, other instance
    { op: 'read', instance: on, path: 'Team/Q3-old/report.pdf' },
    { op: 'read', instance: on, path: 'Team/Q3.bak' },
    { op: 'write', instance: on, path: 'Team/Q3/report.pdf' },
    { op: 'read', instance: 'work', path: 'Team/Q3/report.pdf' },
    { op: 'list', instance: on, path: 'Team' },
    // refused: invalid paths (cheap, but part of the real mix)
    { op: 'read', instance: on, path: 'Team/Q3/../../Secret' },
    { op: 'read', instance: on, path: 'Team/Q3\u202efdp.exe' },
    { op: 'read', instance: on, path: 'Team%2FQ3' },
    { op: 'move', instance: on, from: 'Team/Drafts/café', to: 'Team/Drafts/cafe\u0301' },
  ];
}

function pathOf(op: WallOp): unknown {
  return op.op === 'move'
    ? op.from
    : op.op === 'collection'
      ? op.name
      : 'path' in op
        ? op.path
        : '';
}

/** Times `fn` once per op per round, in µs per call. */
function measure(ops: readonly WallOp[], fn: (op: WallOp) => unknown): number[] {
  const samples: number[] = [];
  let sink = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const op of ops) {
      // performance.now(), not hrtime.bigint(): allocating a BigInt per sample
      // distorted the loop being measured (p50 ×6 in trials).
      const start = performance.now();
      const out = fn(op);
      const end = performance.now();
      if (out !== undefined) sink += 1;
      samples.push((end - start) * 1000);
    }
  }
  if (sink < 0) throw new Error('unreachable: keeps results alive');
  return samples;
}

const bench: Bench = async () => {
  const grants = buildGrants(lcg(42));
  // The same grants as an immutable snapshot (a frozen list of frozen grants), which
  // decide() indexes once and then looks up by the path's ancestors.
  const frozen: readonly GrantView[] = Object.freeze(grants.map((g) => Object.freeze({ ...g })));
  const ops = buildOps();
  const policy: InstancePolicy = { discovery: false };

  // Check the workload does what it says, on both forms, before timing it.
  for (const list of [grants, frozen]) {
    const allowed = ops.filter((op) => decide(op, list, policy, NOW).ok).length;
    if (allowed !== 5) throw new Error(`wall bench: expected 5 allowed ops, got ${allowed}`);
  }

  const bareScan = (op: WallOp): number => {
    let n = 0;
    for (const g of grants) if (g.instance === op.instance) n += 1;
    return n;
  };
  const scanned = (op: WallOp): unknown => decide(op, grants, policy, NOW);
  const indexed = (op: WallOp): unknown => decide(op, frozen, policy, NOW);
  const canonicalOnly = (op: WallOp): unknown => canonicalPath(pathOf(op));

  // Warm up the JIT on every loop, then measure them interleaved, round by round.
  const loops = [scanned, indexed, canonicalOnly, bareScan];
  for (let i = 0; i < 200; i += 1) for (const op of ops) for (const fn of loops) fn(op);
  const [scanUs, indexUs, canonicalUs, bareUs] = loops.map((): number[] => []) as [
    number[],
    number[],
    number[],
    number[],
  ];
  for (let i = 0; i < 50; i += 1) {
    scanUs.push(...measure(ops, scanned));
    indexUs.push(...measure(ops, indexed));
    canonicalUs.push(...measure(ops, canonicalOnly));
    bareUs.push(...measure(ops, bareScan));
  }

  const scanP99 = percentile(scanUs, 99);
  const indexP99 = percentile(indexUs, 99);
  const canonicalP50 = { name: 'canonicalPath only, p50', value: percentile(canonicalUs, 50) };
  const canonicalP99 = { name: 'canonicalPath only, p99', value: percentile(canonicalUs, 99) };
  const target = `p99 < ${TARGET_P99_US} µs`;
  return {
    title: `Wall decision latency (${GRANTS.toLocaleString('en-US')} active grants)`,
    rows: [
      {
        metric: 'decide p50, frozen snapshot (indexed)',
        value: percentile(indexUs, 50),
        unit: 'µs',
        baseline: canonicalP50,
      },
      {
        metric: 'decide p99, frozen snapshot (indexed)',
        value: indexP99,
        unit: 'µs',
        baseline: canonicalP99,
        target,
        met: indexP99 < TARGET_P99_US,
      },
      {
        metric: 'decide p50, plain array (scan)',
        value: percentile(scanUs, 50),
        unit: 'µs',
        baseline: canonicalP50,
      },
      {
        // Not the shipped path (the pipeline decides on the frozen snapshot): no target.
        metric: 'decide p99, plain array (scan; not used by the pipeline)',
        value: scanP99,
        unit: 'µs',
        baseline: canonicalP99,
      },
      {
        metric: 'bare scan p99 (instance compare only)',
        value: percentile(bareUs, 99),
        unit: 'µs',
        baseline: canonicalP99,
      },
    ],
    notes: [
      `${scanUs.length.toLocaleString('en-US')} decisions per form over ${ops.length} operations (5 allowed, 9 refused: siblings, wrong mode, other instance, traversal, bidi, percent-escape, NFC/NFD move); 1 in 5 grants on the instance under test, 5% expired.`,
      'A plain (mutable) array is scanned in full on every call, cheap filters first. A frozen list of frozen grants is indexed once (WeakMap, instance → path → grants) and each decision looks up only the path and its ancestors; every candidate still passes the same full check, so both forms answer identically (property-tested).',
      'The pipeline decides on GrantStore.unendedGrants(): one frozen snapshot of the grants not yet ended, rebuilt only when SQLite reports a write (data_version, total_changes), so it gets the indexed row; expiry is still checked against now on each decision.',
      `Load average during the run: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs. The scan touches ~2,000 grant objects per decision and its tail grows with cache pressure from other processes; the indexed lookup touches a handful.`,
    ],
  };
};

export default bench;
