/**
 * A PUT sent while the file is still being hashed (cli/client/transfer/upload-send.ts),
 * against a server that records what arrives: the hash goes after the bytes only once
 * both reads are done, and when the hash finds the file is the copy last recorded after
 * all, or that it changed between the two reads, the PUT is cut before any digit, so no
 * broker could commit it.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransferClient } from '../../../cli/client/transfer/broker-client.js';
import type { Digest } from '../../../cli/client/transfer/file-bytes.js';
import { sendHashing, type Sending } from '../../../cli/client/transfer/upload-send.js';
import { until } from '../../../support/until.js';

interface Arrival {
  bytes: Buffer;
  headers: Record<string, string | string[] | undefined>;
  ended: boolean;
  aborted: boolean;
}

let server: Server;
let url: string;
const arrivals: Arrival[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const arrival: Arrival = {
      bytes: Buffer.alloc(0),
      headers: req.headers,
      ended: false,
      aborted: false,
    };
    arrivals.push(arrival);
    req.on('data', (c: Buffer) => (arrival.bytes = Buffer.concat([arrival.bytes, c])));
    req.on('aborted', () => (arrival.aborted = true));
    req.on('end', () => {
      arrival.ended = true;
      const file = arrival.bytes.subarray(0, -64);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          status: 'ok',
          message: 'stored',
          sha256: createHash('sha256').update(file).digest('hex'),
          size: file.length,
          etag: '"e"',
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const ticket = { status: 'ok', message: 'ticket', blob_url: '/transfer/blobs/t' } as const;
const SIZE = 3 * 1024 * 1024;

function setUp(): { sending: Sending; file: string; digest: Digest } {
  const dir = mkdtempSync(join(tmpdir(), 'broker-upload-send-'));
  const file = join(dir, 'f.bin');
  const bytes = Buffer.alloc(SIZE, 5);
  writeFileSync(file, bytes);
  const client = new TransferClient({
    brokerUrl: new URL(url),
    token: 't'.repeat(32),
    stageRoot: dir,
    stateDir: `${dir}.state`,
  });
  const silent = () => ({ add: () => undefined, stop: () => undefined });
  const sending: Sending = { client, file, mode: 'push', progress: silent };
  return {
    sending,
    file,
    digest: { sha256: createHash('sha256').update(bytes).digest('hex'), size: SIZE },
  };
}

/** A hash that resolves only once the server has every byte of the file. */
const hashedAfterTheBytes = (digest: Digest, arrival: () => Arrival | undefined) =>
  until('every byte to arrive', () => (arrival()?.bytes.length ?? 0) >= SIZE, undefined, 5).then(
    () => digest,
  );

describe('a PUT that declares its hash at its end', () => {
  it('sends the hash after the bytes, once the hash is done', async () => {
    const { sending, digest } = setUp();
    const at = arrivals.length;
    const sent = await sendHashing(
      sending,
      ticket,
      SIZE,
      hashedAfterTheBytes(digest, () => arrivals[at]),
      () => false,
    );
    const arrival = arrivals[at] as Arrival;
    expect(arrival.headers['x-broker-sha256-at-end']).toBe('1');
    expect(arrival.headers['content-length']).toBe(String(SIZE + 64));
    expect(arrival.bytes.subarray(SIZE).toString('latin1')).toBe(digest.sha256);
    expect(sent).toMatchObject({ local: digest, stored: { sha256: digest.sha256 } });
  });

  it('the copy last recorded after all: cut before its hash, nothing to commit', async () => {
    const { sending, digest } = setUp();
    const at = arrivals.length;
    const sent = await sendHashing(
      sending,
      ticket,
      SIZE,
      hashedAfterTheBytes(digest, () => arrivals[at]),
      () => true,
    );
    expect(sent).toEqual({ unedited: digest });
    const arrival = arrivals[at] as Arrival;
    await until('the server to see the cut', () => arrival.aborted, undefined, 5);
    expect(arrival.ended).toBe(false);
    expect(arrival.bytes.length).toBe(SIZE);
  });

  it('attack: the hash read another length than was sent (the file changed): cut, a verification failure', async () => {
    const { sending, digest } = setUp();
    const at = arrivals.length;
    const grown = hashedAfterTheBytes({ ...digest, size: SIZE + 1 }, () => arrivals[at]);
    await expect(sendHashing(sending, ticket, SIZE, grown, () => false)).rejects.toMatchObject({
      code: 'verification',
    });
    const arrival = arrivals[at] as Arrival;
    await until('the server to see the cut', () => arrival.aborted, undefined, 5);
    expect(arrival.ended).toBe(false);
  });

  it('a small file hashed before the call was answered, the copy last recorded: nothing is sent', async () => {
    const { sending, digest } = setUp();
    const at = arrivals.length;
    const sent = await sendHashing(sending, ticket, SIZE, Promise.resolve(digest), () => true);
    expect(sent).toEqual({ unedited: digest });
    expect(arrivals.length).toBe(at);
  });
});
