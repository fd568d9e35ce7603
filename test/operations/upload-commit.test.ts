/**
 * Attacks on "an upload commits once" (docs/contracts.md): whatever goes wrong before
 * the commit point leaves the destination as it was and no upload folder behind, and the
 * answer says so; what goes wrong after it is answered as a changed file. The whole
 * broker against the fake Nextcloud, with a 1 KiB chunk size so every replacement and
 * every body above 1 KiB is a chunked upload.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetchedEtag, putBlob, startPartialPut } from '../../support/blobs.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { onRequest } from '../../support/fake-requests.js';
import { until } from '../../support/until.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RecordedRequest } from '../../fakes/nextcloud.js';

const CHUNK = 1024;
let broker: Broker;
let transfer: Client;

beforeAll(async () => {
  broker = await startBroker({ chunkSize: CHUNK, putLimit: CHUNK });
  transfer = await broker.transfer();
});
afterAll(async () => {
  await broker.close();
});
beforeEach(() => {
  broker.fake.reset();
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const moves = (): RecordedRequest[] => broker.fake.requests.filter((r) => r.method === 'MOVE');

/** A file on Nextcloud, its etag, and a write grant on its folder (the request id). */
async function existing(path: string, content: string): Promise<{ etag: string; id: number }> {
  await broker.fake.writeFile(path, content);
  const id = await broker.grant([{ path: path.split('/')[0] ?? '', mode: 'write' }]);
  return { etag: await fetchedEtag(broker.url, transfer, path), id };
}

async function replaceTicket(path: string, etag: string, body: Buffer, declared = sha256(body)) {
  const answer = await call(transfer, 'write', {
    instance: 'personal',
    path,
    size: body.length,
    if_match: etag,
    sha256: declared,
  });
  expect(answer.status).toBe('ok');
  return String(answer.blob_url);
}

describe('a revoke between the last chunk and the MOVE', () => {
  it('is refused at the commit point: no MOVE, the file unchanged, no upload folder', async () => {
    const { etag, id } = await existing('Rv/doc.bin', 'the owner version');
    const body = Buffer.alloc(3 * CHUNK, 7);
    const blob = await replaceTicket('Rv/doc.bin', etag, body);
    // The revoke reaches the grant store while the last chunk is on its way, and not the
    // running upload's abort signal: only the check at the commit point can stop it.
    const restore = onRequest(
      broker.fake,
      (r) => r.method === 'PUT' && r.path.endsWith('/3'),
      () => void broker.store.revokeRequest(id),
    );
    try {
      const put = await putBlob(broker.url, blob, TRANSFER_TOKEN, body);
      expect(put.json).toMatchObject({ status: 'refused', code: 'grant_revoked' });
      expect(String(put.json.message)).toContain('nothing was written');
    } finally {
      restore();
    }
    expect(moves()).toEqual([]);
    expect((await broker.fake.readFile('Rv/doc.bin'))?.toString()).toBe('the owner version');
    expect(broker.fake.uploadFolders()).toEqual([]);
    const outcome = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'grant_revoked', cause: 'revoked' });
  });
});

describe('a body whose sha256 differs from the declared one', () => {
  it('a replacement: verification_failed, nothing committed, no upload folder', async () => {
    const { etag } = await existing('Sh/doc.txt', 'original');
    const body = Buffer.from('what actually arrives');
    const blob = await replaceTicket('Sh/doc.txt', etag, body, sha256(Buffer.from('declared')));
    const put = await putBlob(broker.url, blob, TRANSFER_TOKEN, body);
    expect(put.json).toMatchObject({ status: 'error', code: 'verification_failed' });
    expect(String(put.json.message)).toContain('nothing was written');
    expect(moves()).toEqual([]);
    expect((await broker.fake.readFile('Sh/doc.txt'))?.toString()).toBe('original');
    expect(broker.fake.uploadFolders()).toEqual([]);
  });

  it('a new small file (one PUT): the PUT is cut before its last bytes, nothing is stored', async () => {
    await broker.fake.mkdir('Sh2');
    await broker.grant([{ path: 'Sh2', mode: 'write' }]);
    const body = Buffer.from('a new file, not the declared one');
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Sh2/new.txt',
      size: body.length,
      if_none_match: '*',
      sha256: sha256(Buffer.from('something else')),
    });
    const put = await putBlob(broker.url, String(answer.blob_url), TRANSFER_TOKEN, body);
    expect(put.json).toMatchObject({ status: 'error', code: 'verification_failed' });
    expect(await broker.fake.exists('Sh2/new.txt')).toBe(false);
  });
});

describe('a server that answers a different X-Hash-SHA1', () => {
  const upload = async (path: string, body: Buffer) => {
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path,
      size: body.length,
      if_none_match: '*',
      sha256: sha256(body),
    });
    return putBlob(broker.url, String(answer.blob_url), TRANSFER_TOKEN, body);
  };

  it('and holds other bytes: verification_failed, and the answer says what the file now holds', async () => {
    await broker.fake.mkdir('Xh');
    await broker.grant([{ path: 'Xh', mode: 'write' }]);
    const body = Buffer.from('hash me honestly');
    broker.fake.faults.xHash = 'wrong';
    broker.fake.faults.flipByte = true;
    const put = await upload('Xh/a.txt', body);
    broker.fake.faults.flipByte = false;
    const held = (await broker.fake.readFile('Xh/a.txt')) ?? Buffer.alloc(0);
    held[0] = (held[0] ?? 0) ^ 0xff;
    expect(put.json).toMatchObject({
      status: 'error',
      code: 'verification_failed',
      stored: true,
      sha256: sha256(body),
      stored_sha256: sha256(held),
      stored_size: body.length,
    });
    expect(String(put.json.message)).toContain('changed');
  });

  it('but holds exactly the bytes sent: read back, ok, with a warning saying why', async () => {
    await broker.fake.mkdir('Xr');
    await broker.grant([{ path: 'Xr', mode: 'write' }]);
    const body = Buffer.from('stored right, hashed wrong');
    broker.fake.faults.xHash = 'wrong';
    const put = await upload('Xr/a.txt', body);
    expect(put.json).toMatchObject({ status: 'ok', sha256: sha256(body), verified: true });
    expect(JSON.stringify(put.json.warnings)).toContain('differed from the bytes sent');
    expect(broker.fake.requests.at(-1)).toMatchObject({ method: 'GET' });
  });
});

describe('a cut connection mid-chunk', () => {
  it('leaves the destination unchanged and no upload folder', async () => {
    const { etag } = await existing('Cut/doc.bin', 'intact');
    const body = Buffer.alloc(4 * CHUNK, 3);
    const blob = await replaceTicket('Cut/doc.bin', etag, body);
    const outcomes = (): number =>
      broker.auditLines().filter((l) => l.tool === 'blob_put' && l.event === 'outcome').length;
    const before = outcomes();
    // Half of the second chunk, then the client goes away.
    const req = startPartialPut(broker.url, blob, TRANSFER_TOKEN, body, CHUNK + CHUNK / 2);
    await until('the second chunk to reach Nextcloud', () =>
      broker.fake.requests.some((r) => r.method === 'PUT' && r.path.endsWith('/2')),
    );
    req.destroy();
    await until('the upload to be answered in the audit log', () => outcomes() > before);
    expect(moves()).toEqual([]);
    expect((await broker.fake.readFile('Cut/doc.bin'))?.toString()).toBe('intact');
    await until('the upload folder to be deleted', () => broker.fake.uploadFolders().length === 0);
  });
});

describe('a sha256 declared on the PUT (x-broker-sha256)', () => {
  const ticket = async (path: string, body: Buffer, declared?: string) =>
    call(transfer, 'write', {
      instance: 'personal',
      path,
      size: body.length,
      if_none_match: '*',
      ...(declared === undefined ? {} : { sha256: declared }),
    });
  /** PUTs `body` on a new ticket for `path` (`called`: the call's sha256) with `header` declared. */
  const putDeclaring = async (path: string, body: Buffer, header: string, called?: string) =>
    putBlob(broker.url, String((await ticket(path, body, called)).blob_url), TRANSFER_TOKEN, body, {
      headers: { 'x-broker-sha256': header },
    });

  it('an upload ticket names the header; a download ticket does not', async () => {
    await broker.fake.writeFile('Dh/r.txt', 'read me');
    await broker.grant([{ path: 'Dh', mode: 'write' }]);
    const write = await ticket('Dh/w.txt', Buffer.from('x'));
    expect(write.sha256_header).toBe('x-broker-sha256');
    const read = await call(transfer, 'read', { instance: 'personal', path: 'Dh/r.txt' });
    expect(read).not.toHaveProperty('sha256_header');
  });

  it('a body other than the declared one: verification_failed, nothing written', async () => {
    await broker.fake.mkdir('Dh1');
    await broker.grant([{ path: 'Dh1', mode: 'write' }]);
    const body = Buffer.from('the body that is sent');
    const put = await putDeclaring(
      'Dh1/a.txt',
      body,
      sha256(Buffer.from('the body that was hashed')),
    );
    expect(put.json).toMatchObject({ status: 'error', code: 'verification_failed' });
    expect(await broker.fake.exists('Dh1/a.txt')).toBe(false);
  });

  it('a malformed declaration, or one unlike the call: refused before the body, nothing written', async () => {
    await broker.fake.mkdir('Dh2');
    await broker.grant([{ path: 'Dh2', mode: 'write' }]);
    const body = Buffer.from('declared twice');
    const malformed = await putDeclaring('Dh2/a.txt', body, sha256(body).toUpperCase());
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    const other = Buffer.from('declared once, the other way');
    const twice = await putDeclaring('Dh2/b.txt', body, sha256(other), sha256(body));
    expect(twice.status).toBe(400);
    expect(String(twice.json.message)).toContain('differs from the sha256 the tool call declared');
    expect(await broker.fake.exists('Dh2/a.txt')).toBe(false);
    expect(await broker.fake.exists('Dh2/b.txt')).toBe(false);
  });

  it('the declared body: stored, and the audit intent names the declaration', async () => {
    await broker.fake.mkdir('Dh3');
    await broker.grant([{ path: 'Dh3', mode: 'write' }]);
    const body = Buffer.from('declared on the PUT');
    const put = await putDeclaring('Dh3/a.txt', body, sha256(body));
    expect(put.json).toMatchObject({ status: 'ok', sha256: sha256(body) });
    const intent = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'intent')
      .at(-1);
    expect(intent).toMatchObject({ declared_sha256: sha256(body) });
  });
});
