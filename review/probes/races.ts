/**
 * Grant state machine races with real parallelism: three worker threads, each with its
 * own SQLite connection, AuditLog and ApprovalEngine (review/probes/race-worker.ts),
 * approve, deny and revoke the same requests at the same moment. The store decides;
 * the probe then checks that what each racer was told matches what was stored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrantStore } from '../../broker/grants/index.js';
import type { GrantRecord } from '../../broker/base/domain.js';
import { runTsWorker } from '../lib/ts-worker.js';
import type { Case, Group } from '../runner.js';
import type { RacerInput, RacerReply } from './race-worker.js';

const REQUESTS = 40;
const WORKER = new URL('./race-worker.ts', import.meta.url);

interface Outcome {
  approver: RacerReply[];
  denier: RacerReply[];
  revoker: RacerReply[];
  grants: GrantRecord[];
  states: Map<number, string>;
  ids: number[];
}

async function race(): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'review-race-'));
  const file = join(dir, 'grants.db');
  try {
    const store = GrantStore.open(file, { now: Date.now });
    const ids: number[] = [];
    for (let i = 0; i < REQUESTS; i += 1) {
      ids.push(
        store.createRequest({
          instance: 'personal',
          reason: 'race',
          items: [
            { path: `R${i}/a`, mode: 'read' },
            { path: `R${i}/b`, mode: 'write' },
          ],
        }).id,
      );
    }
    const barrier = new SharedArrayBuffer(4);
    const roles = ['approver', 'denier', 'revoker'] as const;
    const [approver, denier, revoker] = await Promise.all(
      roles.map((role) =>
        runTsWorker<RacerReply[]>(
          WORKER,
          { file, role, ids, barrier, racers: roles.length } satisfies RacerInput,
          45_000,
        ),
      ),
    );
    const grants = ids.flatMap(
      (id) => store.getRequest(id)?.items.flatMap((it) => (it.grant ? [it.grant] : [])) ?? [],
    );
    const states = new Map(ids.map((id) => [id, store.getRequest(id)?.state ?? 'missing']));
    store.close();
    return {
      approver: approver ?? [],
      denier: denier ?? [],
      revoker: revoker ?? [],
      grants,
      states,
      ids,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const told = (replies: RacerReply[], prefix: string): Set<number> =>
  new Set(
    replies.flatMap((r) => (r.text.startsWith(prefix) ? [Number(r.command.split(' ')[1])] : [])),
  );

/** The first broken invariant, or 'consistent'. */
function check(o: Outcome): string {
  const approvedTold = told(o.approver, 'Approved request ');
  const deniedTold = told(o.denier, 'Denied request ');
  const all = [...o.approver, ...o.denier, ...o.revoker];
  const internal = all.find((r) => /internal error/i.test(r.text));
  if (internal) return `"${internal.command}" hit an internal error`;
  for (const id of o.ids) {
    const state = o.states.get(id);
    if (state !== 'approved' && state !== 'denied') return `request ${id} ended ${state}`;
    if (approvedTold.has(id) && deniedTold.has(id))
      return `request ${id}: both racers were told they won`;
    if (state === 'approved' && !approvedTold.has(id))
      return `request ${id} approved, approver not told`;
    if (state === 'denied' && !deniedTold.has(id)) return `request ${id} denied, denier not told`;
    const mine = o.grants.filter((g) => g.requestId === id);
    if (state === 'denied' && mine.length > 0) return `denied request ${id} has grants`;
    if (state === 'approved' && mine.length !== 2)
      return `approved request ${id} has ${mine.length} grants`;
  }
  for (const r of o.revoker) {
    const id = Number(r.command.split(' ')[1]);
    if (r.text.startsWith('Revoked') && Number.isInteger(id)) {
      const live = o.grants.filter((g) => g.requestId === id && g.state === 'active');
      if (live.length > 0) return `"${r.command}" said revoked, ${live.length} grants still active`;
    }
  }
  const revokeAll = o.revoker.find((r) => r.command === 'revoke all');
  if (revokeAll === undefined) return 'revoke all never ran';
  const survivor = o.grants.find((g) => g.state === 'active' && g.createdAt < revokeAll.sentAt);
  if (survivor) return `grant ${survivor.id} made before "revoke all" is still active`;
  const decided = approvedTold.size + deniedTold.size;
  return decided === REQUESTS ? 'consistent' : `${decided} of ${REQUESTS} decisions reported`;
}

export const raceGroup: Group = {
  title: 'probes: grant state machine races (3 connections in 3 threads, one SQLite file)',
  build: () => {
    let outcome: Promise<Outcome> | undefined;
    const once = (): Promise<Outcome> => (outcome ??= race());
    const cases: Case[] = [
      {
        name: `approve, deny and revoke race on ${REQUESTS} two-item requests: each decided once, every racer told the truth, "revoke all" leaves nothing older alive`,
        expect: 'consistent',
        timeoutMs: 50_000,
        run: async () => check(await once()),
      },
      {
        name: 'the race was real: both the approver and the denier won some requests',
        expect: 'both won',
        timeoutMs: 50_000,
        run: async () => {
          const o = await once();
          const approved = [...o.states.values()].filter((s) => s === 'approved').length;
          return approved > 0 && approved < REQUESTS
            ? 'both won'
            : `approver won ${approved} of ${REQUESTS}`;
        },
      },
    ];
    return { cases };
  },
};
