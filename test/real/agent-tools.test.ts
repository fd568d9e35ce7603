/**
 * Every agent tool through the MCP client over HTTP, through the daemon, on the real
 * Nextcloud; the result checked on the server itself.
 */
import { describe, expect, it } from 'vitest';
import { useRealRig } from './rig.js';
import { call } from '../../support/mcp.js';

const rig = useRealRig();

describe('request_access, console approval, check_access', () => {
  it('a request waits for the owner; the approval grants exactly its items', async () => {
    const answer = await call(rig.agent, 'request_access', {
      instance: 'personal',
      reason: 'read the reports',
      items: [
        { path: 'Reports', mode: 'read' },
        { path: 'Drafts', mode: 'write' },
      ],
    });
    expect(answer.status).toBe('pending');
    const id = answer.request as number;
    expect(await call(rig.agent, 'check_access', { request: id })).toMatchObject({
      status: 'pending',
      state: 'pending',
    });
    await rig.broker.gateway.decide(`approve ${id} 1`);
    const decided = await call(rig.agent, 'check_access', { request: id });
    expect(decided).toMatchObject({ status: 'ok', state: 'partially_approved' });
    const all = await call(rig.agent, 'check_access', {});
    expect(all.grants).toEqual(
      expect.arrayContaining([expect.objectContaining({ request: id, path: 'Reports' })]),
    );
    expect(JSON.stringify(all.grants)).not.toContain('Drafts');
  });
});

describe('list_instances', () => {
  it('names the instances and their discovery flags, never the server or the account', async () => {
    const answer = await call(rig.agent, 'list_instances');
    expect(answer.instances).toEqual([
      { name: 'personal', discovery: false },
      { name: 'shared', discovery: true },
    ]);
    const text = JSON.stringify(answer);
    for (const secret of [rig.server.url, rig.server.owner.user, rig.server.owner.password])
      expect(text).not.toContain(secret);
  });
});

describe('list', () => {
  it('lists a granted folder as the server holds it: folders first, sizes, times', async () => {
    await rig.owner.writeFile('Listing/one.txt', '1');
    await rig.owner.writeFile('Listing/two.txt', '22');
    await rig.owner.mkdirs('Listing/sub');
    await rig.broker.grant([{ path: 'Listing', mode: 'read' }]);
    const answer = await call(rig.agent, 'list', { instance: 'personal', path: 'Listing' });
    expect(answer.status).toBe('ok');
    const entries = answer.entries as { name: string; kind: string; size: number | null }[];
    expect(entries.map((e) => [e.name, e.kind, e.size])).toEqual([
      ['sub', 'folder', null],
      ['one.txt', 'file', 1],
      ['two.txt', 'file', 2],
    ]);
    expect(Date.parse(String((entries[1] as { modified?: string }).modified))).toBeGreaterThan(0);
  });

  it('discovery lists the root of the shared instance, names only', async () => {
    await rig.owner.writeFile('Top/file.txt', 'x');
    const answer = await call(rig.agent, 'list', { instance: 'shared', path: '' });
    expect(answer).toMatchObject({ status: 'ok', discovery: true });
    const entries = answer.entries as Record<string, unknown>[];
    expect(entries).toContainEqual({ name: 'Top', kind: 'folder' });
    for (const e of entries) expect(Object.keys(e).sort()).toEqual(['kind', 'name']);
  });

  it('a path without a grant is refused and never reaches the server', async () => {
    await rig.owner.writeFile('Private/secret.txt', 'no');
    expect(await call(rig.agent, 'list', { instance: 'personal', path: 'Private' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
  });
});

describe('answers that say what the agent can do next, on the real server', () => {
  it('list of a file: not_a_folder, naming `broker fetch INSTANCE:PATH`', async () => {
    await rig.owner.writeFile('AFile/doc.txt', 'content');
    await rig.broker.grant([{ path: 'AFile', mode: 'read' }]);
    const answer = await call(rig.agent, 'list', { instance: 'personal', path: 'AFile/doc.txt' });
    expect(answer).toMatchObject({ status: 'refused', code: 'not_a_folder' });
    expect(answer.hint).toContain('`broker fetch personal:AFile/doc.txt`');
  });

  it('after a revoke: grant_revoked with when, and nothing reaches the server', async () => {
    await rig.owner.mkdirs('Revoked');
    const id = await rig.broker.grant([{ path: 'Revoked', mode: 'read' }]);
    await rig.broker.gateway.decide(`revoke ${id}`);
    const answer = await call(rig.agent, 'list', { instance: 'personal', path: 'Revoked' });
    expect(answer).toMatchObject({ status: 'refused', code: 'grant_revoked', ended_by: 'owner' });
    expect(answer.message).toContain('revoked by the owner at');
  });

  it('a literal "[redacted]" folder is listed as itself (only real secrets are refused)', async () => {
    await rig.owner.writeFile('Red/[redacted]/inside.txt', 'x');
    await rig.broker.grant([{ path: 'Red', mode: 'read' }]);
    const answer = await call(rig.agent, 'list', { instance: 'personal', path: 'Red/[redacted]' });
    expect(answer).toMatchObject({ status: 'ok', path: 'Red/[redacted]' });
    expect((answer.entries as { name: string }[]).map((e) => e.name)).toEqual(['inside.txt']);
  });
});

describe('mkdir', () => {
  it('creates the folder on the server; an existing one is a conflict', async () => {
    await rig.owner.mkdirs('Made');
    await rig.broker.grant([{ path: 'Made', mode: 'write' }]);
    expect(
      await call(rig.agent, 'mkdir', { instance: 'personal', path: 'Made/new' }),
    ).toMatchObject({ status: 'ok' });
    expect(await rig.owner.list('Made')).toEqual(['new']);
    expect(
      await call(rig.agent, 'mkdir', { instance: 'personal', path: 'Made/new' }),
    ).toMatchObject({ status: 'refused', code: 'conflict' });
  });

  it('a read grant cannot create a folder', async () => {
    await rig.owner.mkdirs('ReadMk');
    await rig.broker.grant([{ path: 'ReadMk', mode: 'read' }]);
    expect(
      await call(rig.agent, 'mkdir', { instance: 'personal', path: 'ReadMk/x' }),
    ).toMatchObject({ status: 'refused' });
    expect(await rig.owner.list('ReadMk')).toEqual([]);
  });
});

describe('move', () => {
  it('renames and moves on the server, keeping the content', async () => {
    await rig.owner.writeFile('Mv/a.txt', 'content of a');
    await rig.owner.mkdirs('Mv/dir');
    await rig.broker.grant([{ path: 'Mv', mode: 'write' }]);
    expect(
      await call(rig.agent, 'move', { instance: 'personal', from: 'Mv/a.txt', to: 'Mv/dir/b.txt' }),
    ).toMatchObject({ status: 'ok' });
    expect(await rig.owner.read('Mv/a.txt')).toBeUndefined();
    expect(await rig.owner.read('Mv/dir/b.txt')).toBe('content of a');
  });

  it('never overwrites: onto an existing file it is refused and both files stay', async () => {
    await rig.owner.writeFile('Mv2/a.txt', 'a');
    await rig.owner.writeFile('Mv2/b.txt', 'b');
    await rig.broker.grant([{ path: 'Mv2', mode: 'write' }]);
    expect(
      await call(rig.agent, 'move', { instance: 'personal', from: 'Mv2/a.txt', to: 'Mv2/b.txt' }),
    ).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(await rig.owner.read('Mv2/a.txt')).toBe('a');
    expect(await rig.owner.read('Mv2/b.txt')).toBe('b');
    expect(await rig.owner.trash()).toEqual([]);
  });
});

describe('trash', () => {
  it('sends a file to the trash bin, from where the owner restores it', async () => {
    await rig.owner.writeFile('Tr/keep.txt', 'precious');
    await rig.broker.grant([{ path: 'Tr', mode: 'write' }]);
    const trashed = await call(rig.agent, 'trash', { instance: 'personal', path: 'Tr/keep.txt' });
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(await rig.owner.read('Tr/keep.txt')).toBeUndefined();
    // Trashed under a name no other delete can take; restored, it comes back under it.
    const as = String(trashed['trashed_as']);
    expect(as).toMatch(/^Tr\/keep \(trashed [a-z2-7]{8}\)\.txt$/);
    const item = (await rig.owner.trash()).find((t) => t.original === as);
    expect(item).toBeDefined();
    expect(await rig.owner.restore(item?.item ?? '', 'keep.txt')).toBe(201);
    expect(await rig.owner.read(as)).toBe('precious');
  });

  it('sends a whole folder to the trash bin', async () => {
    await rig.owner.writeFile('TrDir/inner/x.txt', 'x');
    await rig.broker.grant([{ path: 'TrDir', mode: 'write' }]);
    const trashed = await call(rig.agent, 'trash', { instance: 'personal', path: 'TrDir/inner' });
    expect(trashed).toMatchObject({ status: 'ok' });
    expect(await rig.owner.list('TrDir')).toEqual([]);
    expect(trashed['trashed_as']).toMatch(/^TrDir\/inner \(trashed [a-z2-7]{8}\)$/);
    expect((await rig.owner.trash()).map((t) => t.original)).toContain(trashed['trashed_as']);
  });
});
