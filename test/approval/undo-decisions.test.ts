/**
 * `undo` is an owner's decision like the others (issue 39): typed in the encrypted room
 * it counts only from a pinned device, judged by the same rules as `approve`
 * (encrypted-decisions.ts); in a clear-text room it is refused outright, since the
 * homeserver could type it as the owner; on the console it runs. What undo does on
 * Nextcloud is test/operations/undo/; here only who may ask for it, through the real room with real
 * crypto on the owner's phone and laptop (support/matrix.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNDO_NEEDS_ENCRYPTION } from '../../broker/approval/engine.js';
import type { UndoAnswer, UndoCommand } from '../../broker/operations/undo/service.js';
import { harness } from '../../support/approval.js';
import { e2eeRig, OWNER, ROOM, type E2eeRig } from '../../support/matrix.js';

/** Every undo the engine ran, and what it answers: nothing on record. */
const asked: UndoCommand[] = [];
const undo = (command: UndoCommand): Promise<UndoAnswer> => {
  asked.push(command);
  return Promise.resolve({
    ok: true,
    target: command.target,
    dryRun: command.dryRun,
    items: [],
    warnings: [],
    exit: 0,
  });
};

let rig: E2eeRig;

beforeAll(async () => {
  rig = await e2eeRig({ undo });
}, 30_000);

afterAll(async () => {
  await rig.close();
});

describe('undo in the encrypted room', () => {
  it('from the pinned phone: run, with the approver as the actor, and answered in the room', async () => {
    asked.length = 0;
    const h = await rig.handledOf(await rig.say(rig.phone, 'undo --request 4 --dry-run'));
    expect(h.kind).toBe('text');
    expect(asked).toEqual([{ target: { request: 4 }, dryRun: true, actor: OWNER }]);
    expect(h.reply?.text).toContain('Undo of request 4');
  });

  it('attack: from an unpinned session of the owner’s account: not run, refused as unpinned', async () => {
    asked.length = 0;
    const eventId = await rig.say(rig.laptop, 'undo 12');
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    expect(asked).toEqual([]);
    expect(rig.refusals(eventId)).toMatchObject([{ reason: 'unpinned_device' }]);
  });

  it('attack: typed in clear text by the homeserver as the owner: not run', async () => {
    asked.length = 0;
    const eventId = rig.hs.sayAs(OWNER, ROOM, 'undo 12');
    expect((await rig.handledOf(eventId)).kind).toBe('refused_device');
    expect(asked).toEqual([]);
    expect(rig.refusals(eventId)).toMatchObject([{ reason: 'not_encrypted' }]);
  });
});

describe('attack: undo typed in a clear-text room', () => {
  it('is refused whoever the homeserver says sent it, and nothing runs', async () => {
    asked.length = 0;
    const core = await harness({ channel: 'matrix', undo });
    try {
      const reply = await core.engine.handleText('undo --request 3', OWNER);
      expect(reply?.text).toBe(UNDO_NEEDS_ENCRYPTION);
      expect(reply?.refused).toBe(true);
      expect(asked).toEqual([]);
    } finally {
      await core.close();
    }
  });

  it('the console and the owner socket (apply) run it', async () => {
    asked.length = 0;
    const core = await harness({ channel: 'console', undo });
    try {
      expect((await core.engine.handleText('undo 7', 'console'))?.undo).toMatchObject({ ok: true });
      expect(
        (await core.engine.apply({ kind: 'undo', target: { seq: 8 }, dryRun: false }, 'socket'))
          .undo,
      ).toMatchObject({ ok: true });
      expect(asked.map((c) => [c.target, c.actor])).toEqual([
        [{ seq: 7 }, 'console'],
        [{ seq: 8 }, 'socket'],
      ]);
    } finally {
      await core.close();
    }
  });
});
