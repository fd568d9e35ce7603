/**
 * The audit anchor (issue 14.8) on a real AuditLog with timers the test fires: the head
 * is posted after each decision record and on the interval while records were added,
 * never blocks an append, says in the log when a post failed, and posts the head of
 * that moment once the room answers again.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditAnchor } from '../../broker/audit/anchor.js';
import { AuditLog, verifyAudit } from '../../broker/audit/index.js';
import { memoryLogger } from '../../broker/base/log.js';
import { manualTimers, type ManualTimers } from '../../support/manual-timers.js';
import { until } from '../../support/until.js';
import { tempDir, tickingClock } from './helpers.js';
import { appendLine } from '../../support/audit-line.js';

const HOUR = 3_600_000;
const RETRY = 30_000;

let dir: string;
let log: AuditLog;
let timers: ManualTimers;
let logger: ReturnType<typeof memoryLogger>;
let anchor: AuditAnchor;
/** What reached the room. */
let room: string[];
/** While set, posting fails with this error. */
let down: Error | undefined;

const post = (line: string): Promise<void> => {
  if (down !== undefined) return Promise.reject(down);
  room.push(line);
  return Promise.resolve();
};
const headLine = (): string => `audit anchor ${log.head.seq}:${log.head.hash}`;
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

beforeEach(async () => {
  dir = tempDir();
  log = await AuditLog.open(dir, { now: tickingClock() });
  timers = manualTimers();
  logger = memoryLogger();
  room = [];
  down = undefined;
  anchor = new AuditAnchor({
    head: () => log.head,
    intervalMs: HOUR,
    logger,
    timers,
    retryMs: RETRY,
  });
  await appendLine(log, 'start', {});
  anchor.start(post);
});
afterEach(async () => {
  anchor.stop();
  await log.close();
});

describe('after an owner decision', () => {
  it('posts `audit anchor SEQ:HASH` of the head that holds the decision', async () => {
    const engineAudit = anchor.postingAfter(log);
    const rec = await appendLine(engineAudit, 'decision', { request: 1, outcome: 'approved' });
    await until('the anchor is posted', () => room.length === 1);
    expect(room).toEqual([`audit anchor ${rec.seq}:${rec.hash}`]);
    expect(verifyAudit(dir, [{ seq: rec.seq, hash: rec.hash }])).toMatchObject({ ok: true });
  });

  it('folds decisions made while a post is in flight into one more post, of the newest head', async () => {
    let release: () => void = () => undefined;
    const slow = new Promise<void>((r) => (release = r));
    anchor.stop();
    const sent: string[] = [];
    anchor.start(async (line) => {
      sent.push(line);
      if (sent.length === 1) await slow;
    });
    const engineAudit = anchor.postingAfter(log);
    await appendLine(engineAudit, 'decision', { request: 1 });
    await until('the first post is in flight', () => sent.length === 1);
    for (let i = 2; i <= 5; i += 1) await appendLine(engineAudit, 'decision', { request: i });
    await settle();
    expect(sent).toHaveLength(1);
    release();
    await until('the newest head is posted', () => sent.length === 2);
    expect(sent[1]).toBe(headLine());
    await settle();
    expect(sent).toHaveLength(2);
  });

  it('posts nothing after a command that changed nothing (a refusal, a revoke of nothing); the interval anchors it', async () => {
    const engineAudit = anchor.postingAfter(log);
    await engineAudit.append({
      event: 'decision',
      request: 9,
      outcome: 'refused',
      code: 'unknown_request',
    });
    await engineAudit.append({
      event: 'revoke',
      actor: 'console',
      cause: 'owner',
      target: 'all',
      outcome: 'revoked',
      grants: [],
    });
    await settle();
    await settle();
    expect(room).toEqual([]);
    await engineAudit.append({
      event: 'revoke',
      actor: 'console',
      cause: 'owner',
      target: 'all',
      outcome: 'revoked',
      grants: [3],
    });
    await until('the change is anchored', () => room.length === 1);
    expect(room).toEqual([headLine()]);
  });

  it('posts nothing for records the engine did not write, until the interval', async () => {
    await appendLine(log, 'intent', { tool: 'list' });
    await settle();
    expect(room).toEqual([]);
  });
});

describe('on the interval', () => {
  it('posts the head when records were added since the last post, and not otherwise', async () => {
    expect(timers.pending()).toEqual([HOUR]);
    timers.fire(HOUR);
    await settle();
    expect(room).toEqual([]); // the start record was there when the anchor started
    await appendLine(log, 'intent', { tool: 'list' });
    timers.fire(HOUR);
    await until('the interval anchor', () => room.length === 1);
    expect(room).toEqual([headLine()]);
    timers.fire(HOUR);
    await settle();
    expect(room).toHaveLength(1);
    expect(timers.pending()).toEqual([HOUR]);
  });
});

describe('attack: the approval room is down (anchors are best effort)', () => {
  it('appends are not held up, the log says the post failed, and the current head is posted when it is back', async () => {
    down = new Error('homeserver unreachable');
    const engineAudit = anchor.postingAfter(log);
    const decided = await appendLine(engineAudit, 'decision', { request: 1 });
    expect(decided.seq).toBe(2);
    await until('the failure is logged', () =>
      logger.lines.some((l) => l.includes('audit anchor could not be posted')),
    );
    const warning = logger.lines.find((l) => l.includes('could not be posted')) ?? '';
    expect(warning).toContain(`${decided.seq}:${decided.hash}`);
    expect(warning).toContain('homeserver unreachable');
    // Work goes on during the outage.
    await appendLine(log, 'intent', { tool: 'list' });
    await appendLine(log, 'outcome', { tool: 'list' });
    expect(timers.pending()).toContain(RETRY);
    timers.fire(RETRY);
    await until('a second failure', () => timers.pending().includes(2 * RETRY));
    // One warning per outage; the retries are quieter.
    expect(
      logger.lines.filter((l) => l.includes('"warn"') && l.includes('could not be')),
    ).toHaveLength(1);

    down = undefined;
    timers.fire(2 * RETRY);
    await until('the current head is posted', () => room.length === 1);
    expect(room).toEqual([headLine()]);
    expect(log.head.seq).toBe(4);
    expect(logger.lines.some((l) => l.includes('posted again'))).toBe(true);
    expect(timers.pending()).toEqual([HOUR]);
  });

  it('a decision after the outage also posts, without waiting for the retry', async () => {
    down = new Error('502');
    const engineAudit = anchor.postingAfter(log);
    await appendLine(engineAudit, 'decision', { request: 1 });
    await until('the failure', () => timers.pending().includes(RETRY));
    down = undefined;
    await appendLine(engineAudit, 'decision', { request: 2 });
    await until('posted', () => room.length === 1);
    expect(room).toEqual([headLine()]);
  });
});

describe('stop', () => {
  it('clears the timers and posts nothing more', async () => {
    anchor.stop();
    expect(timers.pending()).toEqual([]);
    await appendLine(anchor.postingAfter(log), 'decision', { request: 1 });
    await settle();
    expect(room).toEqual([]);
  });
});
