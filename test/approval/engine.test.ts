import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalEngine } from '../../broker/approval/engine.js';
import { CLEAR_TEXT_NOTICE } from '../../broker/approval/views.js';
import { parseConfig } from '../../broker/config.js';
import { harness, type Harness, D, H, M, T0, LIFECYCLE } from '../../support/approval.js';

const OWNER = '@owner:example.org';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

const decisions = () => h.records().filter((r) => r.event === 'decision');
const revokes = () => h.records().filter((r) => r.event === 'revoke');

describe('approve', () => {
  it('approve N grants every item for the default time and says until when', async () => {
    const n = h.request([
      ['Documents/Taxes', 'read'],
      ['Documents/Taxes/summary.md', 'write'],
    ]);
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.granted).toHaveLength(2);
    expect(reply.text.split('\n')).toEqual([
      `Approved request ${n} until 2025-01-03 12:00 UTC (1d):`,
      `• request ${n} item 1: read personal \`Documents/Taxes\` — 1d left`,
      `• request ${n} item 2: write personal \`Documents/Taxes/summary.md\` — 1d left`,
    ]);
    expect(reply.html).toContain('<code>Documents/Taxes/summary.md</code>');
    const active = h.store.activeGrants();
    expect(active.map((g) => [g.path, g.mode, g.expiresAt])).toEqual([
      ['Documents/Taxes', 'read', T0 + D],
      ['Documents/Taxes/summary.md', 'write', T0 + D],
    ]);
    expect(h.store.getRequest(n)?.state).toBe('approved');
    expect(h.store.getRequest(n)?.decidedBy).toBe(OWNER);
    const [d] = decisions();
    expect(d).toMatchObject({
      request: n,
      actor: OWNER,
      command: `approve ${n}`,
      outcome: 'approved',
      items: [1, 2],
      duration_ms: D,
    });
    expect(d?.grants).toEqual(
      active.map((g) => ({
        id: g.id,
        item: g.itemNo,
        instance: 'personal',
        path: g.path,
        mode: g.mode,
        expires_at: new Date(T0 + D).toISOString(),
      })),
    );
  });

  it('approve N 1,3 grants a subset and names what was not granted', async () => {
    const n = h.request([
      ['a', 'read'],
      ['b', 'write'],
      ['c', 'read'],
    ]);
    const reply = await h.engine.apply({ kind: 'approve', request: n, items: [1, 3] }, OWNER);
    expect(reply.granted?.map((g) => g.path)).toEqual(['a', 'c']);
    expect(reply.text).toContain(`Approved request ${n} (2 of 3 items)`);
    expect(reply.text).toContain('Not granted: item 2.');
    expect(h.store.getRequest(n)?.state).toBe('partially_approved');
    expect(h.store.activeGrants().map((g) => g.path)).toEqual(['a', 'c']);
    expect(decisions()[0]).toMatchObject({ outcome: 'partially_approved', items: [1, 3] });
  });

  it('approve N 8h sets a custom expiry counted from now on the broker clock', async () => {
    const n = h.request([['a', 'read']]);
    h.clock.now += 5 * M;
    const reply = await h.engine.apply({ kind: 'approve', request: n, durationMs: 8 * H }, OWNER);
    expect(reply.granted?.[0]?.expiresAt).toBe(T0 + 5 * M + 8 * H);
    expect(reply.text).toContain('until 2025-01-02 20:05 UTC (8h)');
    expect(decisions()[0]).toMatchObject({ duration_ms: 8 * H });
  });

  it('accepts exactly the maximum', async () => {
    const n = h.request([['a', 'read']]);
    const reply = await h.engine.apply({ kind: 'approve', request: n, durationMs: 7 * D }, OWNER);
    expect(reply.granted).toHaveLength(1);
  });

  it('wrong answer fixed: the suggested shorter expiry keeps the chosen items (never approves more)', async () => {
    const n = h.request([
      ['a', 'read'],
      ['b', 'write'],
      ['c', 'write'],
    ]);
    const reply = await h.engine.handleText(`approve ${n} 1 30d`, OWNER);
    expect(reply?.text).toContain(`e.g. "approve ${n} 1 7d"`);
    expect(reply?.text).not.toContain(`"approve ${n} 7d"`);
    expect(h.store.activeGrants()).toEqual([]);
  });

  it('refuses an expiry above the maximum, grants nothing, and leaves the request pending', async () => {
    const n = h.request([['a', 'read']]);
    const reply = await h.engine.apply({ kind: 'approve', request: n, durationMs: 8 * D }, OWNER);
    expect(reply.granted).toBeUndefined();
    expect(reply.text).toBe(
      'The expiry 8d is above the maximum of 7d; nothing was granted. Use a shorter one, e.g. "approve 1 7d".',
    );
    expect(h.store.activeGrants()).toEqual([]);
    expect(h.store.getRequest(n)?.state).toBe('pending');
    expect(decisions()[0]).toMatchObject({
      request: n,
      outcome: 'refused',
      code: 'expiry_above_max',
    });
    // still decidable with a valid expiry
    expect((await h.engine.apply({ kind: 'approve', request: n }, OWNER)).granted).toHaveLength(1);
  });

  it('refuses bad item numbers and grants nothing', async () => {
    const n = h.request([
      ['a', 'read'],
      ['b', 'read'],
    ]);
    const reply = await h.engine.apply({ kind: 'approve', request: n, items: [1, 5] }, OWNER);
    expect(reply.text).toBe(
      `Request ${n} has items 1 to 2; "1,5" does not fit. Nothing was granted.`,
    );
    expect(h.store.activeGrants()).toEqual([]);
    expect(h.store.getRequest(n)?.state).toBe('pending');
    expect(decisions()[0]).toMatchObject({ outcome: 'refused', code: 'bad_items' });
  });

  it('answers an unknown request number', async () => {
    const reply = await h.engine.apply({ kind: 'approve', request: 99 }, OWNER);
    expect(reply.text).toContain('There is no request 99; nothing changed.');
    expect(reply.text).toContain('Type "status"');
    expect(decisions()[0]).toMatchObject({
      request: 99,
      outcome: 'refused',
      code: 'unknown_request',
    });
  });

  it('answers "already decided" and changes nothing', async () => {
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'deny', request: n }, OWNER);
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toContain(
      `Request ${n} was already decided (denied by ${OWNER} at 2025-01-02 12:00 UTC); nothing changed.`,
    );
    expect(h.store.activeGrants()).toEqual([]);
    expect(decisions().map((d) => d.outcome)).toEqual(['denied', 'refused']);
    expect(decisions()[1]).toMatchObject({ code: 'already_decided' });
  });

  it('an approved request cannot be approved again (no second set of grants)', async () => {
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: n, items: [1] }, OWNER);
    const again = await h.engine.apply({ kind: 'approve', request: n, durationMs: 7 * D }, OWNER);
    expect(again.text).toContain('already decided (approved by');
    expect(h.store.activeGrants()).toHaveLength(1);
    expect(h.store.activeGrants()[0]?.expiresAt).toBe(T0 + D);
  });

  it('refuses a request past its pending time even before the sweeper marked it', async () => {
    const n = h.request([['a', 'read']]);
    h.clock.now += LIFECYCLE.pending_timeout;
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toBe(
      `Request ${n} expired without a decision; nothing was granted. The agent can ask again.`,
    );
    expect(h.store.activeGrants()).toEqual([]);
    expect(decisions()[0]).toMatchObject({ outcome: 'refused', code: 'expired' });
    const deny = await h.engine.apply({ kind: 'deny', request: n }, OWNER);
    expect(deny.text).toContain('expired without a decision');
  });

  it('refuses a request the sweeper already expired', async () => {
    const n = h.request([['a', 'read']]);
    h.clock.now += LIFECYCLE.pending_timeout + 1;
    h.store.expirePending(LIFECYCLE.pending_timeout);
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.granted).toBeUndefined();
    expect(reply.text).toMatch(/expired|already decided/);
    expect(h.store.activeGrants()).toEqual([]);
  });

  it('two approvals racing: one wins, the other is answered "already decided"', async () => {
    const n = h.request([['a', 'read']]);
    const [a, b] = await Promise.all([
      h.engine.apply({ kind: 'approve', request: n, durationMs: H }, OWNER),
      h.engine.apply({ kind: 'approve', request: n }, OWNER),
    ]);
    expect(a.granted).toHaveLength(1);
    expect(b.text).toContain('already decided');
    expect(h.store.activeGrants()).toHaveLength(1);
    expect(decisions().map((d) => d.outcome)).toEqual(['approved', 'refused']);
  });
});

describe('deny', () => {
  it('denies, grants nothing, and audits', async () => {
    const n = h.request([['a', 'read']]);
    const reply = await h.engine.apply({ kind: 'deny', request: n }, OWNER);
    expect(reply.text).toBe(`Denied request ${n}; nothing was granted.`);
    expect(h.store.getRequest(n)?.state).toBe('denied');
    expect(decisions()[0]).toMatchObject({
      request: n,
      actor: OWNER,
      outcome: 'denied',
      command: `deny ${n}`,
    });
  });

  it('answers deny of an unknown or decided request', async () => {
    expect((await h.engine.apply({ kind: 'deny', request: 5 }, OWNER)).text).toContain(
      'There is no request 5; nothing changed.',
    );
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    const reply = await h.engine.apply({ kind: 'deny', request: n }, OWNER);
    expect(reply.text).toContain('already decided (approved by');
    expect(h.store.activeGrants()).toHaveLength(1);
  });
});

describe('attack: the audit log fails', () => {
  it('an approval that cannot be audited is undone and the reply says so', async () => {
    const n = h.request([
      ['a', 'read'],
      ['b', 'write'],
    ]);
    h.failAudit(true);
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toBe(
      [
        `The decision on request ${n} could not be recorded in the audit log, so it was undone: nothing is granted.`,
        'Check the broker log and disk; the agent has to ask again.',
      ].join('\n'),
    );
    expect(reply.granted).toBeUndefined();
    expect(reply.revoked?.map((g) => g.path)).toEqual(['a', 'b']);
    expect(h.store.activeGrants()).toEqual([]);
    expect(h.revokedCalls.map((c) => c.map((g) => g.path))).toEqual([['a', 'b']]);
    expect(h.logger.lines.join('')).toContain('audit append failed');
    // no decision line reached the log
    expect(decisions()).toEqual([]);
  });

  it('a denial that cannot be audited stands (it grants nothing) and says the audit failed', async () => {
    const n = h.request([['a', 'read']]);
    h.failAudit(true);
    const reply = await h.engine.apply({ kind: 'deny', request: n }, OWNER);
    expect(reply.text).toContain(`Denied request ${n}`);
    expect(reply.text).toContain('could not record this denial');
    expect(h.store.getRequest(n)?.state).toBe('denied');
  });

  it('a revoke that cannot be audited still revokes', async () => {
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    h.failAudit(true);
    const reply = await h.engine.apply({ kind: 'revoke', target: 'all' }, OWNER);
    expect(reply.revoked).toHaveLength(1);
    expect(reply.text).toContain('could not record this revoke');
    expect(h.store.activeGrants()).toEqual([]);
  });

  it('a refusal that cannot be audited is still answered', async () => {
    h.failAudit(true);
    const reply = await h.engine.apply({ kind: 'approve', request: 42 }, OWNER);
    expect(reply.text).toContain('There is no request 42');
    expect(reply.text).toContain('could not record this refusal');
  });
});

describe('revoke', () => {
  async function twoRequests(): Promise<[number, number, number]> {
    const a = h.request([
      ['a', 'read'],
      ['b', 'write'],
    ]);
    const b = h.request([['c', 'read']], 'work');
    const c = h.request([['d', 'read']]);
    for (const n of [a, b, c]) await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    return [a, b, c];
  }

  it('revoke N ends that request’s grants, tells onRevoked, and audits', async () => {
    const [a] = await twoRequests();
    const reply = await h.engine.apply({ kind: 'revoke', target: { request: a } }, OWNER);
    expect(reply.revoked?.map((g) => g.path)).toEqual(['a', 'b']);
    expect(reply.text.split('\n')[0]).toBe(`Revoked 2 grants (request ${a}):`);
    expect(h.store.activeGrants().map((g) => g.path)).toEqual(['c', 'd']);
    expect(h.revokedCalls.map((c) => c.map((g) => g.path))).toEqual([['a', 'b']]);
    expect(revokes()[0]).toMatchObject({
      actor: OWNER,
      cause: 'command',
      target: { request: a },
      outcome: 'revoked',
      grants: reply.revoked?.map((g) => g.id),
    });
  });

  it('revoke <instance> ends every grant on that instance only', async () => {
    await twoRequests();
    const reply = await h.engine.apply({ kind: 'revoke', target: { instance: 'personal' } }, OWNER);
    expect(reply.revoked?.map((g) => g.path)).toEqual(['a', 'b', 'd']);
    expect(h.store.activeGrants().map((g) => g.path)).toEqual(['c']);
    expect(revokes()[0]).toMatchObject({ target: { instance: 'personal' }, outcome: 'revoked' });
  });

  it('revoke all ends everything', async () => {
    await twoRequests();
    const reply = await h.engine.apply({ kind: 'revoke', target: 'all' }, OWNER);
    expect(reply.revoked).toHaveLength(4);
    expect(reply.text.split('\n')[0]).toBe('Revoked 4 grants (all grants):');
    expect(h.store.activeGrants()).toEqual([]);
    expect(revokes()[0]).toMatchObject({ target: 'all' });
  });

  it('answers an unknown instance, lists the known ones, and audits the refusal', async () => {
    const reply = await h.engine.apply({ kind: 'revoke', target: { instance: 'nope' } }, OWNER);
    expect(reply.text).toBe(
      'There is no instance "nope" (known: personal, work); nothing changed.',
    );
    expect(revokes()[0]).toMatchObject({ outcome: 'refused', code: 'unknown_instance' });
  });

  it('answers an unknown request, and a request with nothing active', async () => {
    expect((await h.engine.apply({ kind: 'revoke', target: { request: 77 } }, OWNER)).text).toBe(
      'There is no request 77; nothing changed.',
    );
    const n = h.request([['a', 'read']]);
    const denied = h.request([['b', 'read']]);
    await h.engine.apply({ kind: 'deny', request: denied }, OWNER);
    const reply = await h.engine.apply({ kind: 'revoke', target: { request: denied } }, OWNER);
    expect(reply.text).toBe(`No active grants for request ${denied}; nothing to revoke.`);
    expect(h.revokedCalls).toEqual([]);
    // Wrong answer fixed: "nothing to revoke" on a pending request read as if it were
    // dealt with, while it could still be approved. It says it still waits, and how to refuse.
    const pending = await h.engine.apply({ kind: 'revoke', target: { request: n } }, OWNER);
    expect(pending.text).toContain(`Request ${n} is still pending`);
    expect(pending.text).toContain(`"deny ${n}"`);
    expect(h.store.getRequest(n)?.state).toBe('pending');
  });

  it('revoking twice: the second finds nothing', async () => {
    const [a] = await twoRequests();
    await h.engine.apply({ kind: 'revoke', target: { request: a } }, OWNER);
    const again = await h.engine.apply({ kind: 'revoke', target: { request: a } }, OWNER);
    expect(again.revoked).toEqual([]);
    expect(again.text).toContain('nothing to revoke');
  });

  it('a failing onRevoked is reported, and the revoke stands', async () => {
    await h.close();
    h = await harness({ onRevokedFails: true });
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    const reply = await h.engine.apply({ kind: 'revoke', target: 'all' }, OWNER);
    expect(reply.text).toContain('Releasing locks or transfers failed');
    expect(h.store.activeGrants()).toEqual([]);
  });
});

describe('undoApproval (the approver removed their 👍)', () => {
  it('revokes what the request granted and confirms', async () => {
    const n = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    const reply = await h.engine.undoApproval(n, OWNER);
    expect(reply.revoked).toHaveLength(1);
    expect(reply.text.split('\n')[0]).toBe(`Approval of request ${n} withdrawn: revoked 1 grant:`);
    expect(h.store.activeGrants()).toEqual([]);
    expect(revokes()[0]).toMatchObject({ cause: 'approval_withdrawn', target: { request: n } });
  });

  it('says so when there is nothing to undo', async () => {
    const n = h.request([['a', 'read']]);
    const reply = await h.engine.undoApproval(n, OWNER);
    expect(reply.text).toContain('nothing was revoked');
    expect(reply.revoked).toEqual([]);
  });
});

describe('status', () => {
  it('lists active grants with time left, and pending requests', async () => {
    const a = h.request([['Documents/Taxes', 'read']]);
    await h.engine.apply({ kind: 'approve', request: a, durationMs: 3 * H }, OWNER);
    const b = h.request([
      ['x', 'write'],
      ['y', 'read'],
    ]);
    h.clock.now += 46 * M;
    const reply = await h.engine.apply({ kind: 'status' }, OWNER);
    expect(reply.text).toContain(
      `• request ${a} item 1: read personal \`Documents/Taxes\` — 2h 14m left`,
    );
    if (typeof h.store.pendingRequests === 'function') {
      expect(reply.text).toContain(`• request ${b} · personal · 2 items — expires in 11h 14m`);
    }
    // status is not a decision: nothing audited
    expect(h.records().filter((r) => r.event === 'decision')).toHaveLength(1);
  });

  it('ends with the clear-text room warning when the gateway gives one, and only then', async () => {
    const plain = await h.engine.apply({ kind: 'status' }, OWNER);
    expect(plain.text).not.toContain('matrix.encryption');
    const engine = new ApprovalEngine({
      store: h.store,
      audit: h.audit,
      now: () => h.clock.now,
      config: { lifecycle: LIFECYCLE, instances: new Map([['personal', {}]]) },
      statusNotice: CLEAR_TEXT_NOTICE,
    });
    const warned = await engine.apply({ kind: 'status' }, OWNER);
    expect(warned.text.split('\n').at(-1)).toBe(CLEAR_TEXT_NOTICE);
    expect(CLEAR_TEXT_NOTICE).toContain('matrix.encryption: off');
  });

  it('drops grants that expired', async () => {
    const a = h.request([['a', 'read']]);
    await h.engine.apply({ kind: 'approve', request: a, durationMs: H }, OWNER);
    h.clock.now += H;
    const reply = await h.engine.apply({ kind: 'status' }, OWNER);
    expect(reply.text.split('\n')[0]).toBe('No active grants.');
  });
});

describe('handleText and handleReaction', () => {
  it('ignores chatter, answers parse errors, applies commands', async () => {
    const n = h.request([['a', 'read']]);
    expect(await h.engine.handleText('thanks, looks good', OWNER)).toBeNull();
    const bad = await h.engine.handleText(`approve ${n} 0`, OWNER);
    expect(bad?.text).toContain('1 or more');
    expect(h.store.activeGrants()).toEqual([]);
    const good = await h.engine.handleText(`Approve ${n} 2h`, OWNER);
    expect(good?.granted?.[0]?.expiresAt).toBe(T0 + 2 * H);
    expect((await h.engine.handleText('help', OWNER))?.text).toContain('approve N 1,3 8h');
  });

  it('👍🏽 approves, 👎️ denies, 🛇 revokes, 📋 status, ✋ is ignored', async () => {
    const a = h.request([['a', 'read']]);
    const b = h.request([['b', 'read']]);
    expect(await h.engine.handleReaction('✋', a, OWNER)).toBeNull();
    expect((await h.engine.handleReaction('👍🏽', a, OWNER))?.granted).toHaveLength(1);
    expect((await h.engine.handleReaction('👎️', b, OWNER))?.text).toContain(`Denied request ${b}`);
    expect((await h.engine.handleReaction('📋', a, OWNER))?.text).toContain('Active grants (1)');
    expect((await h.engine.handleReaction('🛇', a, OWNER))?.revoked).toHaveLength(1);
    expect(h.store.activeGrants()).toEqual([]);
  });
});

describe('robustness', () => {
  it('an internal failure is answered generically and logged, not thrown', async () => {
    const n = h.request([['a', 'read']]);
    h.store.close();
    const reply = await h.engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toContain('internal error');
    expect(h.logger.lines.join('')).toContain('approval command failed');
    // the queue keeps working after a failure
    const next = await h.engine.apply({ kind: 'help' }, OWNER);
    expect(next.text).toContain('Commands');
    h.store = (await import('../../broker/grants/index.js')).GrantStore.open(':memory:', {
      now: () => h.clock.now,
    });
  });

  it('takes its policy from a BrokerConfig-shaped object too', async () => {
    const engine = new ApprovalEngine({
      store: h.store,
      audit: h.audit,
      now: () => h.clock.now,
      config: { lifecycle: { ...LIFECYCLE, max_grant: H }, instances: new Map([['personal', {}]]) },
    });
    const n = h.request([['a', 'read']]);
    const reply = await engine.apply({ kind: 'approve', request: n, durationMs: 2 * H }, OWNER);
    expect(reply.text).toContain('above the maximum of 1h');
    const rv = await engine.apply({ kind: 'revoke', target: { instance: 'work' } }, OWNER);
    expect(rv.text).toContain('There is no instance "work" (known: personal)');
  });

  it('a non-positive default expiry is refused (fail closed on a bad policy)', async () => {
    const engine = new ApprovalEngine({
      store: h.store,
      audit: h.audit,
      now: () => h.clock.now,
      lifecycle: { ...LIFECYCLE, default_grant: 0 },
      instances: new Set(['personal']),
    });
    const n = h.request([['a', 'read']]);
    const reply = await engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toContain('positive whole duration');
    expect(h.store.activeGrants()).toEqual([]);
    expect(decisions()[0]).toMatchObject({ outcome: 'refused', code: 'bad_duration' });
  });

  it('runs on a parsed config.yaml (approval: console)', async () => {
    const yaml = [
      'approval: console',
      `tokens: { agent: "${'a'.repeat(40)}", transfer: "${'t'.repeat(40)}" }`,
      'lifecycle: { pending_timeout: 1h, default_grant: 4h, max_grant: 2d }',
      'instances:',
      '  personal: { url: "https://cloud.example.org", username: alice, app_password: "Abcde-Fghij-Klmno-Pqrst" }',
    ].join('\n');
    const { config } = parseConfig(yaml, {
      baseDir: h.dir,
      env: {},
      readFile: () => {
        throw new Error('no files');
      },
    });
    const engine = new ApprovalEngine({
      store: h.store,
      audit: h.audit,
      now: () => h.clock.now,
      config,
    });
    const n = h.request([['a', 'read']]);
    expect(
      (await engine.apply({ kind: 'approve', request: n, durationMs: 3 * D }, OWNER)).text,
    ).toContain('above the maximum of 2d');
    expect(
      (await engine.apply({ kind: 'approve', request: n }, OWNER)).granted?.[0]?.expiresAt,
    ).toBe(T0 + 4 * H);
    const other = h.request([['b', 'read']]);
    h.clock.now += H;
    expect((await engine.apply({ kind: 'approve', request: other }, OWNER)).text).toContain(
      'expired without a decision',
    );
    expect(
      (await engine.apply({ kind: 'revoke', target: { instance: 'personal' } }, OWNER)).revoked,
    ).toHaveLength(1);
  });

  it('default expiry above the maximum is refused, not clamped', async () => {
    const engine = new ApprovalEngine({
      store: h.store,
      audit: h.audit,
      now: () => h.clock.now,
      lifecycle: { ...LIFECYCLE, default_grant: 2 * D, max_grant: D },
      instances: new Set(['personal']),
    });
    const n = h.request([['a', 'read']]);
    const reply = await engine.apply({ kind: 'approve', request: n }, OWNER);
    expect(reply.text).toContain('The expiry 2d is above the maximum of 1d');
    expect(h.store.activeGrants()).toEqual([]);
  });
});

describe('attack: echoed input in error replies', () => {
  it('a mistyped command with invisible or control characters is echoed escaped', async () => {
    const reply = await h.engine.handleText('\u202Eapprove 3', OWNER);
    expect(reply?.text).toContain('"\\u{202E}approve" is not a command');
    const esc = await h.engine.handleText('aprov\u001b 3', OWNER);
    expect(esc?.text).toContain('"aprov\\u{001B}" is not a command');
    expect(esc?.text).not.toMatch(/[\u202E\p{Cc}]/u);
    expect(reply?.text).not.toMatch(/[\u202E\p{Cc}]/u);
    const html = await h.engine.handleText('<b>aprove 3', OWNER);
    expect(html).toBeNull();
    const tagged = await h.engine.handleText('approv< 3', OWNER);
    expect(tagged?.html).toContain('&quot;approv&lt;&quot; is not a command');
  });
});
