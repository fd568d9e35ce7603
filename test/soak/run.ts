/**
 * `npm run soak`: 64 concurrent agents against the whole broker (real HTTP, MCP SDK
 * clients, SQLite, fsynced audit log, fake Nextcloud on loopback) mixing list, mkdir,
 * move, trash and transfers (read/write tickets and blob streams) across several
 * grants, for a fixed number of operations, while an owner loop keeps revoking grants
 * and approving new ones (some with a few seconds' expiry, so grants also run out).
 *
 * Then it checks: no HTTP 5xx and no `error` envelope; every request Nextcloud received
 * has an intent line for its path that was durable before the request arrived; no
 * operation that reached Nextcloud ran on a revoked or expired grant; what was read is
 * what was written; the audit chain verifies. Prints `N passed, M failed`; exits 1 on
 * any failure. Bounded: finishes by itself (SOAK_OPS operations; a 4.5-minute guard).
 *
 *   SOAK_OPS (default 8000)  SOAK_AGENTS (64)  SOAK_FOLDERS (6)  SOAK_SEED (1)
 *   SOAK_REQUEST_TIMEOUT_MS (5000): server.request_timeout_ms; shorter makes clients that
 *   wait on a busy broker meet its idle timeout (the blob uploads' idle timeout once cut
 *   uploads that still committed).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifyAudit } from '../../broker/audit/index.js';
import { callTool } from '../../support/mcp.js';
import { startBroker } from '../../support/daemon.js';
import {
  intentsPrecedeRequests,
  intentsWithoutOutcome,
  operationsInsideLiveGrants,
  type ArrivedRequest,
  type AuditLine,
} from './checks.js';
import { newTally, SoakAgent } from './workload.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

const OPS = Number(process.env.SOAK_OPS ?? 8000);
const AGENTS = Number(process.env.SOAK_AGENTS ?? 64);
const FOLDERS = Number(process.env.SOAK_FOLDERS ?? 6);
const SEED = Number(process.env.SOAK_SEED ?? 1);
const REQUEST_TIMEOUT_MS = Number(process.env.SOAK_REQUEST_TIMEOUT_MS ?? 5_000);
const GUARD_MS = 270_000;

function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<number> {
  const started = performance.now();
  const guard = setTimeout(() => {
    process.stderr.write(
      `soak: still running after ${GUARD_MS / 1000} s; giving up\n0 passed, 1 failed\n`,
    );
    process.exit(1);
  }, GUARD_MS);
  guard.unref();

  // The soak's agents are refused by design (revokes and expiries land mid-run): a
  // refusal budget that never runs out, so each call is answered as itself. The limiter
  // is held by its own suites (test/operations/refusal-flood.test.ts).
  const broker = await startBroker({
    sweepIntervalMs: 250,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    // The soak judges what was done, not how fast: on a loaded machine the in-process
    // fake can take longer than the tests' 5 s to answer one of 64 agents' reads, and a
    // write answered `nextcloud_unavailable` for it is no finding of the soak's.
    nextcloud: { timeoutMs: 60_000 },
    refusalBudget: { burst: 1_000_000, perSecond: 1 },
  });
  const rand = lcg(SEED);
  const results: { name: string; ok: boolean; detail: string }[] = [];
  const check = (name: string, ok: boolean, detail: string): void => {
    results.push({ name, ok, detail });
  };
  try {
    for (let k = 0; k < FOLDERS; k += 1)
      for (let a = 0; a < AGENTS; a += 1) await broker.fake.mkdir(`Soak/G${k}/a${a}`);

    // Each request Nextcloud receives is stamped with the audit log's durable head.
    const arrived: ArrivedRequest[] = [];
    const requests = broker.fake.requests;
    const push = requests.push.bind(requests);
    requests.push = (...items) => {
      for (const item of items)
        arrived.push({
          method: item.method,
          path: item.path,
          durableSeq: broker.audit.head.seq,
          ...(typeof item.headers['destination'] === 'string'
            ? { destination: item.headers['destination'] }
            : {}),
        });
      return push(...items);
    };

    const owner = await broker.agent();
    const current = new Map<number, number>();
    const approve = async (k: number, short: boolean): Promise<void> => {
      const answer = await callTool(owner, 'request_access', {
        instance: 'personal',
        reason: `soak folder ${k}`,
        items: [{ path: `Soak/G${k}`, mode: 'write' }],
      });
      if (answer.status !== 'pending') throw new Error(`request_access: ${JSON.stringify(answer)}`);
      const id = answer.request as number;
      await broker.gateway.decide(short ? `approve ${id} 2s` : `approve ${id}`);
      current.set(k, id);
    };
    for (let k = 0; k < FOLDERS; k += 1) await approve(k, false);

    const tally = newTally();
    const agents: SoakAgent[] = [];
    for (let a = 0; a < AGENTS; a += 1) {
      agents.push(
        new SoakAgent({
          id: a,
          agent: await broker.agent(),
          transfer: await broker.transfer(),
          brokerUrl: broker.url,
          transferToken: TRANSFER_TOKEN,
          folders: FOLDERS,
          rand: lcg(SEED * 1_000 + a),
          tally,
        }),
      );
    }

    let issued = 0;
    let done = false;
    let revokes = 0;
    let approvals = 0;
    // The owner: revoke a folder's grant, then approve a new request for it (one in four
    // with a 2 s expiry, so grants also end by expiry while agents work).
    const churnErrors: string[] = [];
    const churn = (async () => {
      while (!done) {
        await sleep(100 + Math.floor(rand() * 150));
        if (done) break;
        const k = Math.floor(rand() * FOLDERS);
        const id = current.get(k);
        if (id !== undefined) {
          await broker.gateway.decide(`revoke ${id}`);
          revokes += 1;
        }
        await sleep(30 + Math.floor(rand() * 70));
        await approve(k, rand() < 0.25);
        approvals += 1;
      }
    })().catch((error: unknown) => {
      churnErrors.push(error instanceof Error ? error.message : String(error));
    });
    await Promise.all(
      agents.map(async (agent) => {
        while (issued < OPS) {
          issued += 1;
          await agent.step();
        }
      }),
    );
    done = true;
    await churn;
    const seconds = (performance.now() - started) / 1000;

    // The truth of the answers: an upload not answered ok must not be on Nextcloud, and
    // one answered ok must be there, byte for byte (the last ok answer for its path).
    for (const agent of agents) {
      const stored = new Set<string>();
      for (const [path, attempt] of agent.unconfirmed) {
        const held = await broker.fake.readFile(path);
        if (held !== undefined && held.equals(attempt.body)) {
          tally.storedDespiteAnswer.push(`${path} (answered ${attempt.answer})`);
          stored.add(path);
        }
      }
      for (const [path, body] of agent.files) {
        if (stored.has(path)) continue;
        const held = await broker.fake.readFile(path);
        if (held === undefined || !held.equals(body))
          tally.missingDespiteOk.push(
            `${path} (${held === undefined ? 'absent' : `${held.length} other bytes`})`,
          );
      }
    }

    // Stop the daemon and close the log before reading it back.
    await broker.server.close();
    await broker.audit.close();
    const records = readFileSync(join(broker.dir, 'audit.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as AuditLine);

    check(
      'the owner could revoke and approve throughout',
      churnErrors.length === 0,
      churnErrors.join('; '),
    );
    check('no HTTP 5xx', tally.http5xx.length === 0, tally.http5xx.slice(0, 5).join('; '));
    check(
      'no error envelope or transport failure',
      tally.errors.length === 0,
      tally.errors.slice(0, 5).join('; '),
    );
    check(
      `uploads answered refused or failed whose content is on Nextcloud: ${tally.storedDespiteAnswer.length}`,
      tally.storedDespiteAnswer.length === 0,
      tally.storedDespiteAnswer.slice(0, 5).join('; '),
    );
    check(
      `uploads answered ok that are not on Nextcloud as sent: ${tally.missingDespiteOk.length}`,
      tally.missingDespiteOk.length === 0,
      tally.missingDespiteOk.slice(0, 5).join('; '),
    );
    check(
      'reads return what was written',
      tally.corrupt.length === 0,
      tally.corrupt.slice(0, 5).join('; '),
    );
    const order = intentsPrecedeRequests(arrived, records, broker.fake.user);
    check(
      `every Nextcloud request (${arrived.length}) has an earlier durable intent for its path`,
      order.violations.length === 0 && arrived.length > 0,
      order.violations
        .slice(0, 5)
        .map((v) => v.detail)
        .join('; '),
    );
    const live = operationsInsideLiveGrants(arrived, order.matched, records);
    check(
      'no operation ran on a revoked or expired grant',
      live.length === 0,
      live
        .slice(0, 5)
        .map((v) => v.detail)
        .join('; '),
    );
    const unpaired = intentsWithoutOutcome(records);
    check(
      'every intent has exactly one outcome, none an internal error',
      unpaired.length === 0,
      unpaired.slice(0, 5).join('; '),
    );
    const verdict = verifyAudit(broker.dir);
    check(
      `the audit chain verifies (${records.length} records)`,
      verdict.ok,
      verdict.ok ? '' : `seq ${verdict.seq}: ${verdict.reason}`,
    );
    const refusedForGrant = [...tally.statuses]
      .filter(([k]) => /refused:(no_grant|grant_revoked|grant_expired)/.test(k))
      .reduce((n, [, v]) => n + v, 0);
    check(
      'revocations took effect (some operations were refused for lack of a grant)',
      revokes > 0 && refusedForGrant > 0,
      `revokes ${revokes}, refusals ${refusedForGrant}`,
    );

    process.stdout.write(
      [
        `soak: ${OPS} operations by ${AGENTS} agents over ${FOLDERS} grants in ${seconds.toFixed(1)} s (${(OPS / seconds).toFixed(0)} ops/s); ${revokes} revokes, ${approvals} new approvals; ${arrived.length} Nextcloud requests; ${records.length} audit records`,
        `ops: ${Object.entries(tally.ops)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        `answers: ${[...tally.statuses]
          .sort()
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        ...results.map(
          (r) =>
            `${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.ok || r.detail === '' ? '' : `: ${r.detail}`}`,
        ),
        '',
      ].join('\n'),
    );
  } catch (error) {
    check(
      'soak ran to completion',
      false,
      error instanceof Error ? (error.stack ?? error.message) : String(error),
    );
    process.stdout.write(`FAIL soak ran to completion: ${results.at(-1)?.detail}\n`);
  } finally {
    await broker.close().catch(() => undefined);
    clearTimeout(guard);
  }
  const failed = results.filter((r) => !r.ok).length;
  process.stdout.write(`${results.length - failed} passed, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
