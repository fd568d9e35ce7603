/**
 * What the real server answers when an operation cannot be done, and what the broker
 * makes of it: 404 (check the path), 409 (a missing parent folder), 412 (changed since
 * read, or the target exists), 423 (locked: retry later), 401 (the app password: the
 * instance is disabled). Races are staged for real: the server changes between the
 * broker's check and its request, so the server's own answer is what decides.
 */
import { describe, expect, it } from 'vitest';
import { nextSecond } from '../../fakes/nextcloud.js';
import { useRealRig } from './rig.js';
import { fetchedEtag, getBlob, putBlob } from '../../support/blobs.js';
import { call } from '../../support/mcp.js';
import { startBrokerOn } from '../../support/daemon.js';

const rig = useRealRig();

/** PUTs `body` to the blob URL with the transfer token; the broker's JSON answer. */
async function putAsAgent(blobUrl: string, body: string): Promise<Record<string, unknown>> {
  const token = rig.broker.config.tokens.transfer;
  return (await putBlob(rig.broker.url, blobUrl, token, Buffer.from(body))).json;
}

/** A write ticket for `path` replacing the version it has now. */
async function replaceTicket(path: string, size: number): Promise<Record<string, unknown>> {
  const etag = await fetchedEtag(rig.broker.url, rig.transfer, path, {
    token: rig.broker.config.tokens.transfer,
  });
  const ticket = await call(rig.transfer, 'write', {
    instance: 'personal',
    path,
    size,
    if_match: etag,
  });
  expect(ticket.status).toBe('ok');
  return { ...ticket, read_etag: etag };
}

describe('404: not found', () => {
  it('list, the blob GET, move and trash of a missing path say to check the path', async () => {
    await rig.owner.mkdirs('Nf');
    await rig.broker.grant([{ path: 'Nf', mode: 'write' }]);
    // The read tool asks Nextcloud nothing: the blob GET finds the path missing.
    const read = await call(rig.transfer, 'read', { instance: 'personal', path: 'Nf/none.txt' });
    const blob = await getBlob(
      rig.broker.url,
      String(read.blob_url),
      rig.broker.config.tokens.transfer,
    );
    expect(blob.status).toBe(403);
    const answers = [
      await call(rig.agent, 'list', { instance: 'personal', path: 'Nf/none' }),
      JSON.parse(blob.body.toString()) as Record<string, unknown>,
      await call(rig.agent, 'move', { instance: 'personal', from: 'Nf/none', to: 'Nf/x' }),
      await call(rig.agent, 'trash', { instance: 'personal', path: 'Nf/none' }),
    ];
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 'refused', code: 'not_found' });
      expect(answer.message).toMatch(/does not exist/);
    }
  });
});

describe('a file replaced by a folder after the read tool answered', () => {
  it('the blob GET refuses it (not_a_file): the banner page is never the file', async () => {
    await rig.owner.writeFile('Sw/a.txt', 'a file for now');
    await rig.broker.grant([{ path: 'Sw', mode: 'read' }]);
    const read = await call(rig.transfer, 'read', { instance: 'personal', path: 'Sw/a.txt' });
    expect((await rig.owner.del('Sw/a.txt')).status).toBe(204);
    await rig.owner.mkdirs('Sw/a.txt');
    const blob = await getBlob(
      rig.broker.url,
      String(read.blob_url),
      rig.broker.config.tokens.transfer,
    );
    expect(blob.status).toBe(403);
    expect(JSON.parse(blob.body.toString())).toEqual({
      status: 'refused',
      code: 'not_a_file',
      message: '"Sw/a.txt" is a folder, not a file; only files can be transferred',
    });
  });
});

describe('409: a missing parent folder', () => {
  it('mkdir and move into a missing folder name the folder to create first', async () => {
    await rig.owner.writeFile('Cf/a.txt', 'a');
    await rig.broker.grant([{ path: 'Cf', mode: 'write' }]);
    const mkdir = await call(rig.agent, 'mkdir', { instance: 'personal', path: 'Cf/no/new' });
    expect(mkdir).toMatchObject({ status: 'refused', code: 'not_found' });
    expect(mkdir.message).toMatch(/create it with mkdir first/);
    const move = await call(rig.agent, 'move', {
      instance: 'personal',
      from: 'Cf/a.txt',
      to: 'Cf/no/a.txt',
    });
    expect(move).toMatchObject({ status: 'refused', code: 'not_found' });
    expect(move.message).toMatch(/target folder does not exist/);
    expect(await rig.owner.read('Cf/a.txt')).toBe('a');
  });
});

describe('412: changed since read, or the target exists', () => {
  it('a replace whose file the owner changed after the ticket: nothing written', async () => {
    await rig.owner.writeFile('Pf/a.txt', 'v1');
    await rig.broker.grant([{ path: 'Pf', mode: 'write' }]);
    const ticket = await replaceTicket('Pf/a.txt', 5);
    await nextSecond();
    expect((await rig.owner.put('Pf/a.txt', 'owner')).status).toBe(204);
    const put = await putAsAgent(ticket.blob_url as string, 'agent');
    expect(put).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(await rig.owner.read('Pf/a.txt')).toBe('owner');
  });

  it('a create whose name the owner took after the ticket: nothing written', async () => {
    await rig.owner.mkdirs('Pf2');
    await rig.broker.grant([{ path: 'Pf2', mode: 'write' }]);
    const ticket = await call(rig.transfer, 'write', {
      instance: 'personal',
      path: 'Pf2/new.txt',
      size: 5,
      if_none_match: '*',
    });
    expect(ticket.status).toBe('ok');
    await rig.owner.put('Pf2/new.txt', 'owner');
    expect(await putAsAgent(ticket.blob_url as string, 'agent')).toMatchObject({
      status: 'refused',
      code: 'conflict',
    });
    expect(await rig.owner.read('Pf2/new.txt')).toBe('owner');
  });

  it('a move onto an existing name (Overwrite: F) is refused, the target kept', async () => {
    await rig.owner.writeFile('Pf3/a.txt', 'a');
    await rig.owner.writeFile('Pf3/b.txt', 'b');
    await rig.broker.grant([{ path: 'Pf3', mode: 'write' }]);
    const answer = await call(rig.agent, 'move', {
      instance: 'personal',
      from: 'Pf3/a.txt',
      to: 'Pf3/b.txt',
    });
    expect(answer).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(answer.message).toMatch(/never overwrite/);
    expect(await rig.owner.read('Pf3/b.txt')).toBe('b');
  });
});

describe('423: locked by someone else', () => {
  it('write, move and trash of a file the owner\u2019s own client locked: the upload refused, the rest error, retry later', async () => {
    await rig.owner.writeFile('Lk/a.txt', 'v1');
    await rig.broker.grant([{ path: 'Lk', mode: 'write' }]);
    const before = await fetchedEtag(rig.broker.url, rig.transfer, 'Lk/a.txt', {
      token: rig.broker.config.tokens.transfer,
    });
    await rig.owner.tokenLock('Lk/a.txt');
    const ticket = await replaceTicket('Lk/a.txt', 5);
    // An upload meets the same lock again: refused (the CLI exits 5), not "retry later".
    expect(await putAsAgent(ticket.blob_url as string, 'agent')).toMatchObject({
      status: 'refused',
      code: 'locked',
    });
    for (const answer of [
      await call(rig.agent, 'move', { instance: 'personal', from: 'Lk/a.txt', to: 'Lk/b.txt' }),
      await call(rig.agent, 'trash', { instance: 'personal', path: 'Lk/a.txt' }),
    ])
      expect(answer).toMatchObject({ status: 'error', code: 'locked', retry: true });
    expect(await rig.owner.read('Lk/a.txt')).toBe('v1');
    // The lock changed the etag: the version read before it no longer matches.
    expect(ticket.read_etag).not.toBe(before);
  });
});

describe('401: a wrong app password', () => {
  it('answers error naming the app password and stops using it; nothing is retried', async () => {
    const wrong = await startBrokerOn({
      url: rig.server.url,
      user: rig.server.owner.user,
      password: 'not-the-app-password-0123456789abcdef',
    });
    try {
      await rig.owner.mkdirs('Auth');
      await wrong.grant([{ path: 'Auth', mode: 'read' }]);
      const agent = await wrong.agent();
      const first = await call(agent, 'list', { instance: 'personal', path: 'Auth' });
      expect(first).toMatchObject({ status: 'error', code: 'nextcloud_auth', retry: false });
      expect(first.message).toMatch(/app password/);
      const second = await call(agent, 'list', { instance: 'personal', path: 'Auth' });
      expect(second).toMatchObject({ status: 'error', code: 'nextcloud_auth' });
      expect(wrong.logger.lines.some((l) => l.includes('instance disabled'))).toBe(true);
      expect(wrong.logger.lines.join('\n')).not.toContain('not-the-app-password');
    } finally {
      await wrong.close();
    }
  });
});
