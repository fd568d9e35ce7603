/**
 * Attack: trash a folder another user shared with the owner. Nextcloud would unshare it
 * (nothing reaches any trash bin, nothing can be restored), though the capabilities say
 * `undelete: true`. The agent's `trash` is refused before any DELETE, with the next step,
 * for the share's root and for any folder holding one; a file inside a share is trashed
 * as usual. A received share's root moves like a folder of one's own.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let broker: Broker;
let agent: Client;

beforeAll(async () => {
  broker = await startBroker();
  agent = await broker.agent();
  await broker.fake.writeFile('BobShared/inner.txt', 'from bob');
  await broker.fake.receiveShare('BobShared', { owner: 'bob' });
  await broker.fake.writeFile('Work/Projects/BobToo/x.txt', 'from bob');
  await broker.fake.receiveShare('Work/Projects/BobToo', { owner: 'bob' });
  await broker.fake.writeFile('Work/notes.txt', 'mine');
  await broker.grant([
    { path: 'BobShared', mode: 'write' },
    { path: 'Work', mode: 'write' },
  ]);
});
afterAll(async () => {
  await broker.close();
});

const deletes = () => broker.fake.requests.filter((r) => r.method === 'DELETE').length;

describe('attack: trash a share the owner received', () => {
  it('its root is refused with the next step; no DELETE is sent; the refusal is audited', async () => {
    const before = deletes();
    const answer = await call(agent, 'trash', { instance: 'personal', path: 'BobShared' });
    expect(answer).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(answer.message)).toContain('ask the owner; this would unshare, not trash');
    expect(deletes()).toBe(before);
    expect(await broker.fake.exists('BobShared/inner.txt')).toBe(true);
    const outcome = broker
      .auditLines()
      .filter((l) => l.tool === 'trash' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'trash_unavailable' });
  });

  it('a folder holding a share deeper down is refused, naming the share', async () => {
    const answer = await call(agent, 'trash', { instance: 'personal', path: 'Work' });
    expect(answer).toMatchObject({ status: 'refused', code: 'trash_unavailable' });
    expect(String(answer.message)).toContain('Work/Projects/BobToo');
    expect(await broker.fake.exists('Work/notes.txt')).toBe(true);
  });

  it('a file inside a share, and a plain file, go to the trash bin', async () => {
    const inShare = await call(agent, 'trash', {
      instance: 'personal',
      path: 'BobShared/inner.txt',
    });
    expect(inShare).toMatchObject({ status: 'ok' });
    const plain = await call(agent, 'trash', { instance: 'personal', path: 'Work/notes.txt' });
    expect(plain).toMatchObject({ status: 'ok' });
    expect(broker.fake.trashed()).toEqual(
      expect.arrayContaining([inShare['trashed_as'], plain['trashed_as']]),
    );
  });

  it('the share root moves like a folder of the owner’s (a plain move, the share follows)', async () => {
    expect(
      await call(agent, 'move', {
        instance: 'personal',
        from: 'Work/Projects/BobToo',
        to: 'Work/BobToo',
      }),
    ).toMatchObject({ status: 'ok' });
    expect(await broker.fake.exists('Work/BobToo/x.txt')).toBe(true);
  });
});
