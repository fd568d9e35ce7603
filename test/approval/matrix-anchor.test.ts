/**
 * The audit anchor through the whole daemon (issue 14.8): the real MatrixGateway and
 * matrix-js-sdk against the fake homeserver, the anchor's timers fired by the test.
 * The head reaches the room after the owner's decision and on the interval; an outage
 * of the homeserver blocks no operation, the log says an anchor could not be posted,
 * and the current head is posted once the homeserver is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../broker/audit/index.js';
import { ROOM, startMatrixBroker, type MatrixBroker } from '../../support/daemon.js';
import { manualTimers } from '../../support/manual-timers.js';
import { FAST } from '../../support/matrix.js';
import { callTool } from '../../support/mcp.js';
import { until } from '../../support/until.js';

const HOUR = 3_600_000;
const ANCHOR = /^audit anchor ([1-9][0-9]*):([0-9a-f]{64})$/;

const timers = manualTimers();
let rig: MatrixBroker;
beforeAll(async () => {
  rig = await startMatrixBroker({ gatewayOptions: FAST, anchorTimers: timers });
});
afterAll(async () => {
  await rig.close();
});

/** Every anchor the bot posted, oldest first. */
function anchors(): { seq: number; hash: string }[] {
  return rig.hs
    .timeline(ROOM)
    .filter((e) => e.sender === rig.config.matrix?.bot_user)
    .map((e) => ANCHOR.exec(String(e.content['body'])))
    .filter((m) => m !== null)
    .map((m) => ({ seq: Number(m[1]), hash: m[2] ?? '' }));
}

describe('the audit anchor in the approval room', () => {
  it('follows the owner’s decision: a head that holds it, which verify --anchor accepts', async () => {
    await rig.fake.writeFile('Reports/a.txt', 'a');
    const before = anchors().length;
    const id = await rig.approveByReaction('Reports');
    await until('the anchor after the decision', () => anchors().length > before);
    const anchor = anchors().at(-1);
    const decision = rig
      .auditLines()
      .find((l) => l.event === 'decision' && l.request === id && l.outcome === 'approved');
    expect(decision).toBeDefined();
    expect(anchor?.seq).toBeGreaterThanOrEqual(Number(decision?.seq));
    expect(rig.auditLines().find((l) => l.seq === anchor?.seq)?.hash).toBe(anchor?.hash);
    expect(verifyAudit(rig.dir, anchor === undefined ? [] : [anchor])).toMatchObject({ ok: true });
  });

  it('is posted on the interval while records were added, not otherwise', async () => {
    const agent = await rig.agent();
    await callTool(agent, 'list', { instance: 'personal', path: 'Reports' });
    // A list's outcome is answered once written and made durable with the next batch
    // (docs/contracts.md §4); the anchor names only durable records, so the interval
    // fires once the log's last line is durable.
    await until('the list’s outcome is durable', () => {
      const last = rig.auditLines().at(-1);
      return last !== undefined && rig.audit.head.seq === last.seq;
    });
    const before = anchors().length;
    timers.fire(HOUR);
    await until('the interval anchor', () => anchors().length === before + 1);
    expect(anchors().at(-1)).toEqual(rig.audit.head);
    timers.fire(HOUR);
    // Nothing was added: the next decision is the proof that no second post went out.
    await rig.approveByReaction('Reports');
    await until('the decision anchor', () => anchors().length === before + 2);
    expect(anchors().at(-1)).toEqual(rig.audit.head);
  });

  it('attack: the homeserver is down — operations go on, the log says so, the head follows when it is back', async () => {
    const agent = await rig.agent();
    await rig.hs.outage(true, 'refuse');
    await until('the gateway notices', () => !rig.gateway.healthy());
    await callTool(agent, 'list', { instance: 'personal', path: 'Reports' });
    timers.fire(HOUR);
    await until('the failed anchor is logged', () =>
      rig.logger.lines.some((l) => l.includes('audit anchor could not be posted')),
    );
    // Operations are not held up by the anchor that could not be posted.
    const listed = await callTool(agent, 'list', { instance: 'personal', path: 'Reports' });
    expect(listed).toMatchObject({ status: 'ok' });
    const posted = anchors().length;

    await rig.hs.outage(false);
    await until('the gateway reconnects', () => rig.gateway.healthy());
    await until(
      'the current head reaches the room',
      () => {
        timers.fire(30_000); // the first retry; later ones double, none is the interval
        timers.fire(60_000);
        return anchors().length > posted;
      },
      10_000,
      100,
    );
    expect(anchors().at(-1)).toEqual(rig.audit.head);
    expect(rig.logger.lines.some((l) => l.includes('audit anchor posted again'))).toBe(true);
  }, 30_000);
});
