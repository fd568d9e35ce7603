/**
 * A blob PUT that declares the file's sha256 after its bytes (`x-broker-sha256-at-end:
 * 1`, Content-Length the size + 64): the client sends while it hashes. Attacks on it: a
 * hash that is not the body's, one unlike the call's, digits that are not a hash, a
 * length without room for them, a body cut in the digits. In each case nothing is
 * written; and the 64 digits never reach Nextcloud as part of the file. A new file (one
 * PUT) and a replacement (a chunked upload, 1 KiB chunks) alike.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { fetchedEtag, putBlob, startPartialPut } from '../../support/blobs.js';
import { until } from '../../support/until.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';

const CHUNK = 1024;
const AT_END = { 'x-broker-sha256-at-end': '1' };
let broker: Broker;
let transfer: Client;

beforeAll(async () => {
  broker = await startBroker({ chunkSize: CHUNK });
  transfer = await broker.transfer();
  await broker.fake.mkdir('End');
  await broker.grant([{ path: 'End', mode: 'write' }]);
});
afterAll(async () => {
  await broker.close();
});
beforeEach(() => {
  broker.fake.reset();
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
/** The file, then 64 digits: the body of a PUT that declares its hash at the end. */
const withDigits = (file: Buffer, digits = sha256(file)): Buffer =>
  Buffer.concat([file, Buffer.from(digits, 'latin1')]);

/** A write ticket for a new file at `path` (or replacing the version `etag`). */
async function ticket(path: string, size: number, more: Record<string, unknown> = {}) {
  const answer = await call(transfer, 'write', {
    instance: 'personal',
    path,
    size,
    ...(more.if_match === undefined ? { if_none_match: '*' } : {}),
    ...more,
  });
  expect(answer.status).toBe('ok');
  return String(answer.blob_url);
}

const lastLine = (tool: string, event: string) =>
  broker
    .auditLines()
    .filter((l) => l.tool === tool && l.event === event)
    .at(-1);

describe('a sha256 declared after the file (x-broker-sha256-at-end)', () => {
  it('an upload ticket names it; a download ticket does not', async () => {
    await broker.fake.writeFile('End/r.txt', 'read me');
    const write = await call(transfer, 'write', {
      instance: 'personal',
      path: 'End/w.txt',
      size: 1,
      if_none_match: '*',
    });
    expect(write.sha256_at_end).toBe('x-broker-sha256-at-end');
    const read = await call(transfer, 'read', { instance: 'personal', path: 'End/r.txt' });
    expect(read).not.toHaveProperty('sha256_at_end');
  });

  it.each([
    ['a new file (one PUT)', 300],
    ['a new file of several chunks', 3 * CHUNK + 5],
  ])('%s: stored without the 64 digits; the intent says where it was declared', async (_, n) => {
    const file = Buffer.alloc(n, 3);
    const path = `End/new-${n}.bin`;
    const put = await putBlob(broker.url, await ticket(path, n), TRANSFER_TOKEN, withDigits(file), {
      headers: AT_END,
    });
    expect(put.json).toMatchObject({ status: 'ok', sha256: sha256(file), size: n });
    expect(await broker.fake.readFile(path)).toEqual(file);
    expect(lastLine('blob_put', 'intent')).toMatchObject({ declared_at_end: true, size: n });
    expect(lastLine('blob_put', 'intent')).not.toHaveProperty('declared_sha256');
  });

  it('a replacement (chunked): stored without the digits', async () => {
    await broker.fake.writeFile('End/doc.bin', 'the owner version');
    const etag = await fetchedEtag(broker.url, transfer, 'End/doc.bin');
    const file = Buffer.alloc(2 * CHUNK + 100, 9);
    const blob = await ticket('End/doc.bin', file.length, { if_match: etag });
    const put = await putBlob(broker.url, blob, TRANSFER_TOKEN, withDigits(file), {
      headers: AT_END,
    });
    expect(put.json).toMatchObject({ status: 'ok', sha256: sha256(file) });
    expect(await broker.fake.readFile('End/doc.bin')).toEqual(file);
  });
});

describe('attack: a declaration at the end that does not hold', () => {
  it('a hash that is not the body’s: verification_failed, nothing written (new file and replacement)', async () => {
    const file = Buffer.from('the bytes that are sent');
    const other = sha256(Buffer.from('the bytes that were hashed'));
    const fresh = await putBlob(
      broker.url,
      await ticket('End/a.txt', file.length),
      TRANSFER_TOKEN,
      withDigits(file, other),
      { headers: AT_END },
    );
    expect(fresh.json).toMatchObject({ status: 'error', code: 'verification_failed' });
    expect(String(fresh.json.message)).toContain('nothing was written');
    expect(await broker.fake.exists('End/a.txt')).toBe(false);

    await broker.fake.writeFile('End/b.bin', 'kept');
    const etag = await fetchedEtag(broker.url, transfer, 'End/b.bin');
    const big = Buffer.alloc(3 * CHUNK, 1);
    const replaced = await putBlob(
      broker.url,
      await ticket('End/b.bin', big.length, { if_match: etag }),
      TRANSFER_TOKEN,
      withDigits(big, other),
      { headers: AT_END },
    );
    expect(replaced.json).toMatchObject({ status: 'error', code: 'verification_failed' });
    expect((await broker.fake.readFile('End/b.bin'))?.toString()).toBe('kept');
    expect(broker.fake.uploadFolders()).toEqual([]);
  });

  it('a hash unlike the one the call declared: refused, nothing written', async () => {
    const file = Buffer.from('declared twice, two ways');
    const blob = await ticket('End/c.txt', file.length, { sha256: sha256(file) });
    const put = await putBlob(
      broker.url,
      blob,
      TRANSFER_TOKEN,
      withDigits(file, sha256(Buffer.from('another'))),
      { headers: AT_END },
    );
    expect(put.json).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    expect(String(put.json.message)).toContain('differs from the one declared before them');
    expect(await broker.fake.exists('End/c.txt')).toBe(false);
  });

  it('digits that are not a lowercase hash: refused, nothing written', async () => {
    const file = Buffer.from('with upper-case digits');
    const put = await putBlob(
      broker.url,
      await ticket('End/d.txt', file.length),
      TRANSFER_TOKEN,
      withDigits(file, sha256(file).toUpperCase()),
      { headers: AT_END },
    );
    expect(put.json).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    expect(await broker.fake.exists('End/d.txt')).toBe(false);
  });

  it('a Content-Length with no room for the digits, or another header value: 400 before the body', async () => {
    const file = Buffer.from('no room for the hash');
    const short = await putBlob(
      broker.url,
      await ticket('End/e.txt', file.length),
      TRANSFER_TOKEN,
      file,
      { headers: AT_END },
    );
    expect(short.status).toBe(400);
    expect(String(short.json.message)).toContain('and the 64 digits of their sha256 after them');
    const odd = await putBlob(
      broker.url,
      await ticket('End/f.txt', file.length),
      TRANSFER_TOKEN,
      withDigits(file),
      { headers: { 'x-broker-sha256-at-end': 'yes' } },
    );
    expect(odd.status).toBe(400);
    expect(await broker.fake.exists('End/e.txt')).toBe(false);
    expect(await broker.fake.exists('End/f.txt')).toBe(false);
  });

  it('a body cut inside the digits: nothing written', async () => {
    const file = Buffer.alloc(500, 5);
    const puts = () =>
      broker.auditLines().filter((l) => l.tool === 'blob_put' && l.event === 'outcome').length;
    const before = puts();
    const req = startPartialPut(
      broker.url,
      await ticket('End/g.bin', file.length),
      TRANSFER_TOKEN,
      withDigits(file),
      file.length + 10,
      AT_END,
    );
    // The client goes away before the rest of the digits.
    await until(
      'the broker to have the file bytes',
      () => broker.fake.requests.some((r) => r.method === 'PUT'),
      10_000,
    );
    req.destroy();
    await until('the upload to be answered', () => puts() > before);
    expect(lastLine('blob_put', 'outcome')).toMatchObject({ outcome: 'error', code: 'aborted' });
    expect(await broker.fake.exists('End/g.bin')).toBe(false);
  });
});
