/**
 * No request of the broker's looks foreign in Nextcloud's logs: an answer no operation's
 * outcome records (it came after its scope ended, or was sent outside any) is held and
 * written in an `nc_requests` batch (broker/operations/stray-answers.ts). A batch that
 * may name a file action goes out by the next sweep; a quiet reconciliation's ids wait
 * for a batch, a day, or the stop, so an idle broker adds no line every interval.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../../broker/audit/events.js';
import { AnswerRecorder, type NextcloudAnswer } from '../../../broker/nextcloud/answers.js';
import {
  LAZY_BATCH,
  LAZY_WAIT_MS,
  MAX_HELD,
  StrayAnswers,
} from '../../../broker/operations/stray-answers.js';
import { startBroker } from '../../../support/daemon.js';

const answer = (n: number, extra: Partial<NextcloudAnswer> = {}): NextcloudAnswer => ({
  requestId: `Req${String(n).padStart(17, '0')}`,
  method: 'GET',
  status: 200,
  ...extra,
});

function strays(now = { t: 0 }, ok = { write: true }) {
  const written: AuditEvent[] = [];
  const batches = new StrayAnswers({
    now: () => now.t,
    write: async (event) => {
      if (!ok.write) return false;
      written.push(event);
      return true;
    },
  });
  return { batches, written, now, ok };
}

describe('an answer after its scope ended', () => {
  it('goes to the connection’s own sink, not to the sink its owner already read', async () => {
    const outside: NextcloudAnswer[] = [];
    const recorder = new AnswerRecorder((a) => outside.push(a));
    const inside: NextcloudAnswer[] = [];
    let late: (() => void) | undefined;
    await recorder.collect(
      (a) => inside.push(a),
      async () => {
        recorder.record(answer(1));
        // A request the step left running: its answer is reported in this scope, later.
        const left = new Promise<void>((resolve) => (late = resolve));
        void left.then(() => recorder.record(answer(2)));
      },
    );
    late?.();
    await Promise.resolve();
    await Promise.resolve();
    expect(inside.map((a) => a.requestId)).toEqual([answer(1).requestId]);
    expect(outside.map((a) => a.requestId)).toEqual([answer(2).requestId]);
  });
});

describe('the stray answers', () => {
  it('are written by the next sweep when one may name a file action, all in one line', async () => {
    const { batches, written } = strays();
    batches.add('personal', answer(1), true);
    batches.add('personal', answer(2, { fileId: '7', etag: '"e"' }));
    await batches.flushDue();
    expect(written).toEqual([
      {
        event: 'nc_requests',
        instance: 'personal',
        source: 'broker',
        nc_request_ids: [answer(1).requestId, answer(2).requestId],
        nc_files: [{ request_id: answer(2).requestId, file_id: '7', etag: '"e"' }],
      },
    ]);
    await batches.flushDue();
    expect(written).toHaveLength(1);
  });

  it('a quiet reconciliation’s wait for a batch of their own, or a day', async () => {
    const { batches, written, now } = strays();
    batches.add('personal', answer(1), true);
    await batches.flushDue();
    expect(written).toEqual([]);
    now.t = LAZY_WAIT_MS;
    await batches.flushDue();
    expect(written).toHaveLength(1);
    for (let i = 0; i < LAZY_BATCH; i++) batches.add('work', answer(i), true);
    await batches.flushDue();
    expect(written).toHaveLength(2);
  });

  it('are all written at the stop', async () => {
    const { batches, written } = strays();
    batches.add('personal', answer(1), true);
    batches.add('work', answer(2), true);
    await batches.flushAll();
    expect(written.map((e) => e.event === 'nc_requests' && e.instance)).toEqual([
      'personal',
      'work',
    ]);
  });

  it('a batch that cannot be written is kept, before what came meanwhile, and written later', async () => {
    const { batches, written, ok } = strays();
    batches.add('personal', answer(1));
    ok.write = false;
    await batches.flushDue();
    batches.add('personal', answer(2));
    ok.write = true;
    await batches.flushDue();
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({
      nc_request_ids: [answer(1).requestId, answer(2).requestId],
    });
  });

  it('beyond what is held, are counted rather than lost', async () => {
    const { batches, written } = strays();
    for (let i = 0; i < MAX_HELD + 3; i++) batches.add('personal', answer(i));
    expect(batches.heldFor('personal')).toBe(MAX_HELD + 3);
    await batches.flushAll();
    expect(written[0]).toMatchObject({ nc_requests_unlisted: 3 });
  });
});

describe('the daemon', () => {
  it('writes a quiet reconciliation’s request ids before its stop line', async () => {
    const broker = await startBroker({ persist: true });
    try {
      await broker.reconciler.passAll({ trigger: 'interval' }); // sets the cursor
      const before = broker.auditLines().length;
      await broker.reconciler.passAll({ trigger: 'interval' }); // nothing new: quiet
      expect(broker.auditLines().length).toBe(before);
      const quiet = broker.fake.requests.at(-1)?.requestId;
      expect(quiet).toBeDefined();
      const next = await broker.restart();
      try {
        const lines = next.auditLines();
        const stop = lines.findIndex((l) => l.event === 'stop');
        const batch = lines.findIndex(
          (l) => l.event === 'nc_requests' && (l.nc_request_ids as string[]).includes(quiet ?? ''),
        );
        expect(batch).toBeGreaterThan(-1);
        expect(batch).toBeLessThan(stop);
      } finally {
        await next.close();
      }
    } finally {
      await broker.close();
    }
  });
});
