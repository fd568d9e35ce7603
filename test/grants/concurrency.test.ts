import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GrantStore } from '../../broker/grants/index.js';
import type { Decision } from '../../broker/grants/index.js';
import { HOUR, approveAll, manualClock, tempDir, twoItems } from './helpers.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

/** Two connections to one database file, as two broker processes would have. */
function twoConnections() {
  const tmp = tempDir();
  const clock = manualClock();
  const a = GrantStore.open(tmp.file, { now: clock.now, pendingTimeoutMs: 12 * HOUR });
  const b = GrantStore.open(tmp.file, { now: clock.now, pendingTimeoutMs: 12 * HOUR });
  cleanups.push(() => {
    a.close();
    b.close();
    tmp.cleanup();
  });
  return { a, b, clock, file: tmp.file };
}

const DECISIONS: [string, Decision][] = [
  ['approve all', approveAll],
  ['approve item 1', { ...approveAll, items: [1] }],
  ['approve item 2', { ...approveAll, items: [2], by: '@other:example.org' }],
  ['deny', { kind: 'deny', by: '@owner:example.org' }],
];

describe('attack: two decisions on one request race (decide-once)', () => {
  for (const [nameA, dA] of DECISIONS) {
    for (const [nameB, dB] of DECISIONS) {
      it(`connection A "${nameA}" after B read pending, then B "${nameB}": exactly one wins`, () => {
        const { a, b } = twoConnections();
        const r = a.createRequest(twoItems);
        // Both sides see the request pending (check-then-act interleaving).
        expect(b.getRequest(r.id)?.state).toBe('pending');
        expect(a.getRequest(r.id)?.state).toBe('pending');
        const first = a.decide(r.id, dA);
        const second = b.decide(r.id, dB);
        expect(first.ok).toBe(true);
        expect(second).toMatchObject({ ok: false, code: 'already_decided' });
        // Only the winner's grants exist, seen identically from both connections.
        const expected = first.ok ? first.granted : [];
        expect(a.activeGrants()).toEqual(expected);
        expect(b.activeGrants()).toEqual(expected);
        expect(b.getRequest(r.id)).toEqual(first.ok ? first.request : undefined);
      });
    }
  }

  it('a revoke on one connection is seen at once by the other', () => {
    const { a, b } = twoConnections();
    const r = a.createRequest(twoItems);
    a.decide(r.id, approveAll);
    expect(b.activeGrants()).toHaveLength(2);
    expect(b.revokeRequest(r.id)).toHaveLength(2);
    expect(a.activeGrants()).toEqual([]);
    expect(a.revokeRequest(r.id)).toEqual([]);
  });

  it('expiry on one connection and approval on the other: one outcome', () => {
    const { a, b, clock } = twoConnections();
    const r = a.createRequest(twoItems);
    clock.advance(12 * HOUR);
    expect(a.expirePending(12 * HOUR).map((x) => x.id)).toEqual([r.id]);
    expect(b.decide(r.id, approveAll)).toMatchObject({ ok: false, code: 'expired' });
    expect(b.activeGrants()).toEqual([]);
  });

  it('separate processes deciding at the same instant: exactly one wins', async () => {
    const { file } = twoConnections();
    // The workers use the real clock, so the request is created on it too.
    const a = GrantStore.open(file, { now: () => Date.now() });
    cleanups.unshift(() => a.close());
    const r = a.createRequest(twoItems);
    const gun = join(file, '..', 'go');
    const kinds = ['approve', 'deny', 'approve1', 'approve'];
    const workers = kinds.map((kind) => {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(import.meta.dirname, 'race-worker.ts'),
          file,
          String(r.id),
          kind,
          gun,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const ready = new Promise<void>((resolve) => {
        const check = () => (out.startsWith('ready\n') ? resolve() : setTimeout(check, 5));
        check();
      });
      const done = new Promise<string>((resolve, reject) =>
        child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(err)))),
      );
      return { ready, done };
    });
    await Promise.all(workers.map((w) => w.ready));
    writeFileSync(gun, '');
    const outs = await Promise.all(workers.map((w) => w.done));
    const results = outs.map(
      (o) => JSON.parse(o.split('\n')[1] ?? '') as { by: string; ok: boolean; code: string | null },
    );
    const winners = results.filter((x) => x.ok);
    expect(winners).toHaveLength(1);
    expect(results.filter((x) => !x.ok).map((x) => x.code)).toEqual(
      Array(kinds.length - 1).fill('already_decided'),
    );
    const request = a.getRequest(r.id);
    expect(request?.decidedBy).toBe(winners[0]?.by);
    const grantCount = request?.items.filter((i) => i.grant !== null).length;
    expect(['denied', 'approved', 'partially_approved']).toContain(request?.state);
    expect(grantCount).toBe(
      request?.state === 'denied' ? 0 : request?.state === 'approved' ? 2 : 1,
    );
  }, 30_000);
});

describe('attack: two connections flood pending requests past lifecycle.max_pending', () => {
  it('interleaved on two connections, never more than the limit wait; the rest name them', () => {
    const { a, b } = twoConnections();
    const results = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? a : b).createRequestWithin(twoItems, 5),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    const waiting = a.pendingRequests().map((r) => r.id);
    expect(waiting).toHaveLength(5);
    for (const r of results.filter((x) => !x.ok)) {
      expect(r).toEqual({ ok: false, code: 'too_many_pending', pending: waiting });
    }
    expect(() => a.createRequestWithin(twoItems, 0)).toThrow(/at least 1/);
  });
});
