/**
 * A checkout's lock on the real server: other writers (a second user the folder is
 * shared with) and the owner's own clients (her app password, no token) get 423 until
 * the broker releases the lock: on checkin, on revoke, and on grant expiry. The release
 * is checked where it matters: the owner can write again.
 */
import { describe, expect, it } from 'vitest';
import { useRealRig } from './rig.js';
import { putBlob } from '../../support/blobs.js';
import { call } from '../../support/mcp.js';

const rig = useRealRig();

/** A checked-out file in a folder shared with the second user; returns the checkout. */
async function checkedOut(folder: string): Promise<{ grant: number; token: string }> {
  await rig.owner.writeFile(`${folder}/doc.txt`, 'v1');
  await rig.share(folder);
  expect(await rig.other.read(`${folder}/doc.txt`)).toBe('v1');
  const grant = await rig.broker.grant([{ path: folder, mode: 'write' }]);
  const out = await call(rig.transfer, 'checkout', {
    instance: 'personal',
    path: `${folder}/doc.txt`,
  });
  expect(out.status).toBe('ok');
  return { grant, token: out.lock_token as string };
}

/** Every way of writing the file without the lock token is refused with 423. */
async function expectLockedAgainstEveryone(folder: string): Promise<void> {
  const file = `${folder}/doc.txt`;
  expect((await rig.other.put(file, 'bob was here')).status).toBe(423);
  expect((await rig.other.del(file)).status).toBe(423);
  expect((await rig.owner.put(file, 'the owner\u2019s sync client')).status).toBe(423);
  expect((await rig.owner.del(file)).status).toBe(423);
  const move = await rig.owner.request('MOVE', rig.owner.target(file), {
    Destination: `${rig.server.url}${rig.owner.target(`${folder}/moved.txt`)}`,
    Overwrite: 'F',
  });
  expect(move.status).toBe(423);
  expect(await rig.owner.read(file)).toBe('v1');
  expect(await rig.owner.locked(file)).toBe(true);
}

/** The lock is gone on the server: the owner's client and the other user write again. */
async function expectUnlocked(folder: string): Promise<void> {
  const file = `${folder}/doc.txt`;
  expect(await rig.owner.locked(file)).toBe(false);
  expect((await rig.owner.put(file, 'owner again')).status).toBe(204);
  expect((await rig.other.put(file, 'bob again')).status).toBe(204);
  expect(await rig.owner.read(file)).toBe('bob again');
}

describe('while a file is checked out', () => {
  it('another writer and the owner\u2019s own clients get 423; the broker writes with the token', async () => {
    const { token } = await checkedOut('Held');
    await expectLockedAgainstEveryone('Held');
    // The checkout itself writes through: the checkin ticket carries the token.
    const ticket = await call(rig.transfer, 'checkin', {
      instance: 'personal',
      path: 'Held/doc.txt',
      lock_token: token,
      size: 2,
    });
    expect(ticket.status).toBe('ok');
    const put = await putBlob(
      rig.broker.url,
      ticket.blob_url as string,
      rig.broker.config.tokens.transfer,
      Buffer.from('v2'),
    );
    expect(put.json).toMatchObject({ status: 'ok', verified: true, unlocked: true });
    expect(await rig.owner.read('Held/doc.txt')).toBe('v2');
    await expectUnlocked('Held');
  });

  it('a second checkout of the same file is refused while the first holds it', async () => {
    await checkedOut('Twice');
    const again = await call(rig.transfer, 'checkout', {
      instance: 'personal',
      path: 'Twice/doc.txt',
    });
    expect(again).toMatchObject({ status: 'error', code: 'locked', retry: true });
  });
});

describe('attack: the lock is taken away while the file is checked out (files_lock 31+ force-unlock)', () => {
  it('the checkin is refused, says the lock no longer holds, and the other writer\u2019s edit stays', async () => {
    const { token } = await checkedOut('Forced');
    expect(await rig.owner.forceUnlock('Forced/doc.txt')).toBe(200);
    expect(await rig.owner.locked('Forced/doc.txt')).toBe(false);
    expect((await rig.other.put('Forced/doc.txt', 'bob edited')).status).toBe(204);
    const ticket = await call(rig.transfer, 'checkin', {
      instance: 'personal',
      path: 'Forced/doc.txt',
      lock_token: token,
      size: 2,
    });
    if (ticket.status === 'ok') {
      const put = await putBlob(
        rig.broker.url,
        ticket.blob_url as string,
        rig.broker.config.tokens.transfer,
        Buffer.from('v2'),
      );
      expect(put.json).toMatchObject({ status: 'refused' });
      expect(String(put.json.message)).toMatch(/lock .*no longer holds|no longer holds/);
    } else expect(ticket).toMatchObject({ status: 'refused' });
    expect(await rig.owner.read('Forced/doc.txt')).toBe('bob edited');
  });
});

describe('the broker releases the lock', () => {
  it('on checkin --abandon', async () => {
    const { token } = await checkedOut('Abandon');
    const answer = await call(rig.transfer, 'checkin', {
      instance: 'personal',
      path: 'Abandon/doc.txt',
      lock_token: token,
      abandon: true,
    });
    expect(answer).toMatchObject({ status: 'ok', unlocked: true });
    expect(answer.etag).toBe(await rig.owner.etag('Abandon/doc.txt'));
    await expectUnlocked('Abandon');
  });

  it('when the owner revokes the grant', async () => {
    const { grant } = await checkedOut('Revoke');
    await expectLockedAgainstEveryone('Revoke');
    await rig.broker.gateway.decide(`revoke ${grant}`);
    await expectUnlocked('Revoke');
    expect(
      rig.broker
        .auditLines()
        .some((l) => l.tool === 'release_lock' && l.event === 'outcome' && l.outcome === 'ok'),
    ).toBe(true);
  });

  it('when the grant expires (the sweep on the broker\u2019s clock)', async () => {
    await checkedOut('Expire');
    await expectLockedAgainstEveryone('Expire');
    rig.broker.clock.offset += 25 * 3_600_000;
    try {
      await rig.broker.server.sweep();
    } finally {
      rig.broker.clock.offset -= 25 * 3_600_000;
    }
    await expectUnlocked('Expire');
    expect(rig.broker.auditLines().some((l) => l.event === 'expire')).toBe(true);
  });
});
