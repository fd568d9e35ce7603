import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalUnavailableError, InMemoryGateway } from '../../broker/approval/gateway.js';
import { verifyAudit } from '../../broker/audit/index.js';
import { harness, type Harness } from '../../support/approval.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

describe('InMemoryGateway', () => {
  it('records posted requests and announcements once started', async () => {
    const g = new InMemoryGateway({ engine: h.engine });
    const n = h.request([['a', 'read']]);
    const request = h.store.getRequest(n)!;
    await expect(g.postRequest(request)).rejects.toBeInstanceOf(ApprovalUnavailableError);
    expect(g.healthy()).toBe(false);
    await g.start();
    expect(g.healthy()).toBe(true);
    await g.postRequest(request);
    await g.announce('hello');
    expect(g.posted.map((r) => r.id)).toEqual([n]);
    expect(g.announcements).toEqual(['hello']);
  });

  it('simulates the approval plane going down, and stopping', async () => {
    const g = new InMemoryGateway({ engine: h.engine });
    await g.start();
    g.up = false;
    expect(g.healthy()).toBe(false);
    await expect(g.announce('x')).rejects.toMatchObject({ code: 'unhealthy' });
    g.up = true;
    await g.stop();
    await expect(g.announce('x')).rejects.toMatchObject({ code: 'stopped' });
  });

  it('decide() and react() speak as the approver through the engine', async () => {
    const g = new InMemoryGateway({ engine: h.engine, actor: '@boss:example.org' });
    await g.start();
    const a = h.request([['a', 'read']]);
    const b = h.request([['b', 'write']]);
    expect(await g.decide('nice weather')).toBeNull();
    expect((await g.decide(`approve ${a} 1h`))?.granted).toHaveLength(1);
    expect((await g.react('👎🏾', b))?.text).toBe(`Denied request ${b}; nothing was granted.`);
    expect(await g.react('✋', b)).toBeNull();
    expect(g.replies).toHaveLength(2);
    expect(h.store.getRequest(a)?.decidedBy).toBe('@boss:example.org');
    expect(verifyAudit(h.dir)).toMatchObject({ ok: true });
  });

  it('decide without an engine is a programming error', async () => {
    await expect(new InMemoryGateway().decide('status')).rejects.toThrow('no engine');
  });
});
