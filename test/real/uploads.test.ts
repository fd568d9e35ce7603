/**
 * "An upload commits once", on the real server: the never-clobber rules hold through both
 * upload routes (one create-only PUT; chunked upload v2 with its MOVE), what Nextcloud
 * stored is verified by its own X-Hash, and a refused, cut or revoked upload leaves the
 * destination as it was and no upload folder behind. A 1 MiB chunk size and put_limit make bodies
 * above 1 MiB (and every replacement) chunked; the broker reaches the server through a
 * gate, so a revoke can land while the chunks move.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nextSecond } from '../../fakes/nextcloud.js';
import { putBlob, startPartialPut } from '../../support/blobs.js';
import { whileHeld, type GateProxy } from '../../support/gate-proxy.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { until } from '../../support/until.js';
import { useRealRig } from './rig.js';

const MiB = 1024 * 1024;
const rig = useRealRig({ chunkSize: MiB, putLimit: MiB }, { gate: true });
const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

const gateOf = (): GateProxy => {
  if (rig.gate === undefined) throw new Error('the rig was built without its gate');
  return rig.gate;
};

/**
 * The chunked-upload folders the broker made (seen passing the gate) that are still on
 * the server. From Nextcloud 34 on the uploads collection cannot be listed (405), so
 * each folder is asked for by name.
 */
async function uploadFolders(): Promise<string[]> {
  const prefix = `/remote.php/dav/uploads/${encodeURIComponent(rig.server.owner.user)}/`;
  const left: string[] = [];
  for (const target of gateOf()
    .mkcols()
    .filter((t) => t.startsWith(prefix))) {
    const res = await rig.owner.request('PROPFIND', target, { Depth: '0' });
    if (res.status === 207) left.push(target);
    else expect(res.status).toBe(404);
  }
  return left;
}

async function ticket(path: string, body: Buffer, condition: Record<string, string>) {
  const answer = await call(rig.transfer, 'write', {
    instance: 'personal',
    path,
    size: body.length,
    sha256: sha256(body),
    ...condition,
  });
  expect(answer.status, JSON.stringify(answer)).toBe('ok');
  return String(answer.blob_url);
}

const put = (blob: string, body: Buffer) => putBlob(rig.broker.url, blob, TRANSFER_TOKEN, body);

describe('a new file is never clobbered', () => {
  it.each([
    ['one PUT', 100],
    ['chunked', 3 * MiB],
  ])('%s: a file the owner created meanwhile stays hers (conflict)', async (_route, size) => {
    const path = `New${size}/a.bin`;
    await rig.owner.mkdirs(`New${size}`);
    await rig.broker.grant([{ path: `New${size}`, mode: 'write' }]);
    const body = randomBytes(size);
    const blob = await ticket(path, body, { if_none_match: '*' });
    await rig.owner.writeFile(path, 'the owner was first');
    const answer = await put(blob, body);
    expect(answer.json).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(await rig.owner.read(path)).toBe('the owner was first');
    expect(await uploadFolders()).toEqual([]);
  });

  it('a new file above transfer.put_limit is chunked, stored whole, verified by Nextcloud', async () => {
    await rig.owner.mkdirs('Big');
    await rig.broker.grant([{ path: 'Big', mode: 'write' }]);
    const body = randomBytes(2 * MiB + 17);
    const answer = await put(await ticket('Big/b.bin', body, { if_none_match: '*' }), body);
    expect(answer.json).toMatchObject({ status: 'ok', sha256: sha256(body), verified: true });
    expect(answer.json.warnings).toEqual([
      expect.stringMatching(/larger than transfer\.put_limit .* chunked upload/),
    ]);
    const back = await rig.owner.request('GET', rig.owner.target('Big/b.bin'));
    expect(sha256(back.body)).toBe(sha256(body));
    expect(await uploadFolders()).toEqual([]);
  });
});

describe('a replacement replaces only the fetched version', () => {
  it('the fetched etag: replaced, verified by X-Hash (no read-back warning)', async () => {
    const etag = await rig.owner.writeFile('Rep/a.txt', 'version one');
    await rig.broker.grant([{ path: 'Rep', mode: 'write' }]);
    await nextSecond();
    const body = Buffer.from('version two, by the agent');
    const answer = await put(await ticket('Rep/a.txt', body, { if_match: etag }), body);
    expect(answer.json).toMatchObject({ status: 'ok', sha256: sha256(body) });
    expect(answer.json.warnings).toBeUndefined();
    expect(await rig.owner.read('Rep/a.txt')).toBe(body.toString());
    expect(await uploadFolders()).toEqual([]);
  });

  it('an etag that changed since: 412 is a conflict, the owner change stays', async () => {
    const etag = await rig.owner.writeFile('Rep2/a.txt', 'version one');
    await rig.broker.grant([{ path: 'Rep2', mode: 'write' }]);
    const body = Buffer.from('the agent edit of version one');
    const blob = await ticket('Rep2/a.txt', body, { if_match: etag });
    await nextSecond();
    await rig.owner.writeFile('Rep2/a.txt', 'the owner edit');
    const answer = await put(blob, body);
    expect(answer.json).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(await rig.owner.read('Rep2/a.txt')).toBe('the owner edit');
    expect(await uploadFolders()).toEqual([]);
  });

  it('a destination locked by another client: 423 (locked), unchanged', async () => {
    await rig.owner.writeFile('Lk/a.txt', 'locked by the desktop client');
    await rig.broker.grant([{ path: 'Lk', mode: 'write' }]);
    await rig.owner.tokenLock('Lk/a.txt');
    const etag = await rig.owner.etag('Lk/a.txt');
    const body = Buffer.from('the agent edit');
    const answer = await put(await ticket('Lk/a.txt', body, { if_match: etag }), body);
    expect(answer.json).toMatchObject({ status: 'refused', code: 'locked' });
    expect(await rig.owner.read('Lk/a.txt')).toBe('locked by the desktop client');
    expect(await uploadFolders()).toEqual([]);
  });
});

describe('an upload that does not finish changes nothing', () => {
  it('a cut connection mid-chunk: the destination unchanged, no upload folder', async () => {
    const etag = await rig.owner.writeFile('Cut/a.bin', 'intact');
    await rig.broker.grant([{ path: 'Cut', mode: 'write' }]);
    const body = randomBytes(3 * MiB);
    const blob = await ticket('Cut/a.bin', body, { if_match: etag });
    const outcomes = (): number =>
      rig.broker.auditLines().filter((l) => l.tool === 'blob_put' && l.event === 'outcome').length;
    const before = outcomes();
    const req = startPartialPut(rig.broker.url, blob, TRANSFER_TOKEN, body, MiB + MiB / 2);
    // Half of the second chunk sent: the upload folder holds the first one.
    await until('the upload to reach Nextcloud', async () => (await uploadFolders()).length > 0);
    req.destroy();
    await until('the upload to be answered in the audit log', () => outcomes() > before, 20_000);
    expect(await rig.owner.read('Cut/a.bin')).toBe('intact');
    expect(await uploadFolders()).toEqual([]);
  });

  it('a revoke during a chunked push: refused, the destination unchanged, no upload folder', async () => {
    const etag = await rig.owner.writeFile('Rv/a.bin', 'before the revoke');
    const id = await rig.broker.grant([{ path: 'Rv', mode: 'write' }]);
    const body = randomBytes(6 * MiB);
    const blob = await ticket('Rv/a.bin', body, { if_match: etag });
    const answer = await whileHeld(
      gateOf(),
      'up',
      2 * MiB,
      () => put(blob, body),
      () => rig.broker.gateway.decide(`revoke ${id}`),
    );
    // The broker stops reading the body when it refuses: the answer may come as a cut.
    if (answer.status !== 0)
      expect(answer.json).toMatchObject({ status: 'refused', code: 'grant_revoked' });
    const outcome = rig.broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'grant_revoked' });
    expect(await rig.owner.read('Rv/a.bin')).toBe('before the revoke');
    await until(
      'the upload folder to be deleted',
      async () => (await uploadFolders()).length === 0,
    );
  });
});
