/**
 * The engine's side of "removing the approver's 👍 undoes it" (docs/architecture.md): which
 * reaction approved what is recorded in the grant store (or, for a store that cannot,
 * in memory), only for a 👍 that granted something, and undone once, only by the
 * approver who reacted, in the room where they did.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalStore } from '../../broker/approval/ports.js';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import type { ReactionLinkStore } from '../../broker/approval/reaction-links.js';
import { harness, LIFECYCLE, type Harness } from '../../support/approval.js';

const OWNER = '@owner:hs.test';
const ROOM = '!approvals:hs.test';
const thumb = (eventId: string, roomId = ROOM) => ({ eventId, roomId });

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

/** The store without its database (e.g. a wrapper): the engine remembers reactions in memory. */
function storeWithoutReactions(): ApprovalStore {
  const s = h.store;
  return {
    getRequest: (id) => s.getRequest(id),
    decide: (id, d) => s.decide(id, d),
    activeGrants: () => s.activeGrants(),
    revokeRequest: (id) => s.revokeRequest(id),
    revokeInstance: (n) => s.revokeInstance(n),
    revokeAll: () => s.revokeAll(),
    revokeGrants: (ids) => s.revokeGrants(ids),
  };
}

function engineOn(store: ApprovalStore, reactions?: ReactionLinkStore): ApprovalEngine {
  return new ApprovalEngine({
    store,
    ...(reactions === undefined ? {} : { reactions }),
    audit: h.audit,
    now: () => h.clock.now,
    lifecycle: LIFECYCLE,
    instances: new Set(['personal']),
    logger: h.logger,
  });
}

describe.each([
  ['the grant store', () => h.engine],
  ['memory (a store without its database)', () => engineOn(storeWithoutReactions())],
])('remembering the approving 👍 in %s', (_where, engine) => {
  it('a 👍 that granted something is undone by its withdrawal, once', async () => {
    const e = engine();
    const n = h.request([['a', 'read']]);
    const approved = await e.handleReaction('👍', n, OWNER, thumb('$t'));
    expect(approved?.granted).toHaveLength(1);
    const undone = await e.undoApprovalReaction(thumb('$t'), OWNER);
    expect(undone?.revoked).toHaveLength(1);
    expect(undone?.text).toContain(`Approval of request ${n} withdrawn`);
    expect(h.store.activeGrants()).toEqual([]);
    expect(await e.undoApprovalReaction(thumb('$t'), OWNER)).toBeNull();
  });

  it('a 👍 that granted nothing, or another allow-listed reaction, is not remembered', async () => {
    const e = engine();
    const n = h.request([['a', 'read']]);
    await e.apply({ kind: 'approve', request: n }, OWNER);
    expect((await e.handleReaction('👍', n, OWNER, thumb('$late')))?.text).toContain(
      'already decided',
    );
    const m = h.request([['b', 'read']]);
    await e.handleReaction('📋', m, OWNER, thumb('$status'));
    await e.handleReaction('👎', m, OWNER, thumb('$deny'));
    for (const id of ['$late', '$status', '$deny']) {
      expect(await e.undoApprovalReaction(thumb(id), OWNER)).toBeNull();
    }
    expect(h.store.activeGrants().map((g) => g.requestId)).toEqual([n]);
  });

  it('a reaction handled without its event is not remembered (nothing to match later)', async () => {
    const e = engine();
    const n = h.request([['a', 'read']]);
    expect((await e.handleReaction('👍', n, OWNER))?.granted).toHaveLength(1);
    expect(await e.undoApprovalReaction(thumb('$t'), OWNER)).toBeNull();
  });

  it('attack: a withdrawal by someone else, or in another room, undoes nothing', async () => {
    const e = engine();
    const n = h.request([['a', 'read']]);
    await e.handleReaction('👍', n, OWNER, thumb('$t'));
    expect(await e.undoApprovalReaction(thumb('$t'), '@eve:hs.test')).toBeNull();
    expect(await e.undoApprovalReaction(thumb('$t', '!other:hs.test'), OWNER)).toBeNull();
    expect(h.store.activeGrants()).toHaveLength(1);
    expect((await e.undoApprovalReaction(thumb('$t'), OWNER))?.revoked).toHaveLength(1);
  });
});

describe('when the link cannot be recorded', () => {
  it('the approval stands, and the reply says removing the 👍 will not undo it', async () => {
    const failing: ReactionLinkStore = {
      record: () => {
        throw new Error('disk I/O error');
      },
      take: () => undefined,
    };
    const n = h.request([['a', 'read']]);
    const reply = await engineOn(storeWithoutReactions(), failing).handleReaction(
      '👍',
      n,
      OWNER,
      thumb('$t'),
    );
    expect(reply?.granted).toHaveLength(1);
    expect(reply?.text).toContain(`Removing the 👍 will not undo this; use "revoke ${n}"`);
    expect(reply?.html).toContain('use &quot;revoke');
    expect(h.store.activeGrants()).toHaveLength(1);
    expect(h.logger.lines.some((l) => l.includes('could not record which reaction'))).toBe(true);
  });

  it('a failing lookup on withdrawal revokes nothing and says what to do instead', async () => {
    const failing: ReactionLinkStore = {
      record: () => true,
      take: () => {
        throw new Error('database is locked');
      },
    };
    const n = h.request([['a', 'read']]);
    const e = engineOn(storeWithoutReactions(), failing);
    await e.handleReaction('👍', n, OWNER, thumb('$t'));
    const reply = await e.undoApprovalReaction(thumb('$t'), OWNER);
    expect(reply?.text).toContain('Use "revoke N"');
    expect(h.store.activeGrants()).toHaveLength(1);
  });
});
