/**
 * The transfer surface and the blob endpoint over real sockets: tickets, streaming with
 * sha256 trailers, uploads that never clobber, checkout/checkin under a real token lock,
 * and revocation or expiry cutting what is in flight.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { AGENT_TOKEN, TRANSFER_TOKEN } from '../../support/tokens.js';
import { call } from '../../support/mcp.js';
import { getBlob, putBlob } from '../../support/blobs.js';
import { rawExchange } from '../../support/raw-http.js';
import { until } from '../../support/until.js';
import { NextcloudClient } from '../../broker/nextcloud/index.js';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

let broker: Broker;
let transfer: Client;

/** A file's etag as Nextcloud holds it (its PROPFIND getetag), asked without the broker. */
async function etagOnServer(path: string): Promise<string | null> {
  const client = new NextcloudClient({
    name: 'personal',
    url: broker.fake.url,
    username: broker.fake.user,
    app_password: broker.fake.password,
  });
  try {
    return (await client.stat(path)).etag;
  } finally {
    client.close();
  }
}

beforeAll(async () => {
  broker = await startBroker();
  transfer = await broker.transfer();
});
afterAll(async () => {
  await broker.close();
});
afterEach(() => {
  broker.fake.reset();
});

describe('check_access', () => {
  it('ok with a grant, refused without, per mode', async () => {
    await broker.grant([{ path: 'Chk', mode: 'read' }]);
    expect(
      await call(transfer, 'check_access', { instance: 'personal', path: 'Chk/a', mode: 'read' }),
    ).toMatchObject({
      status: 'ok',
      path: 'Chk/a',
    });
    expect(
      await call(transfer, 'check_access', { instance: 'personal', path: 'Chk/a', mode: 'write' }),
    ).toMatchObject({ status: 'refused', code: 'no_grant' });
  });
});

describe('read: a round trip with sha256', () => {
  it('streams the exact bytes with size/etag headers and sha256/size trailers; intent+outcome audited', async () => {
    const content = randomBytes(1024 * 1024 + 17);
    await broker.fake.writeFile('Rt/file.bin', content);
    await broker.grant([{ path: 'Rt', mode: 'read' }]);
    broker.fake.requests.length = 0;
    const answer = await call(transfer, 'read', { instance: 'personal', path: 'Rt/file.bin' });
    // The read tool asks Nextcloud nothing: size and etag come with the bytes.
    expect(answer).toMatchObject({ status: 'ok', size: null, etag: null, path: 'Rt/file.bin' });
    expect(broker.fake.requests).toEqual([]);
    expect(answer.blob_url).toBe(`/transfer/blobs/${answer.ticket as string}`);
    const got = await getBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN);
    // One request to Nextcloud for the whole fetch: a GET, no PROPFIND.
    expect(broker.fake.requests.map((r) => r.method)).toEqual(['GET']);
    expect(got.status).toBe(200);
    expect(got.complete).toBe(true);
    expect(got.body.equals(content)).toBe(true);
    expect(got.headers['x-broker-size']).toBe(String(content.length));
    expect(got.headers.etag).toBe(await etagOnServer('Rt/file.bin'));
    expect(got.trailers['x-broker-sha256']).toBe(sha256(content));
    expect(got.trailers['x-broker-size']).toBe(String(content.length));
    // The outcome line follows the last byte; give its fsync a moment.
    await until(
      'the blob_get outcome line',
      () => broker.auditLines().some((l) => l.tool === 'blob_get' && l.event === 'outcome'),
      2_000,
      10,
    );
    const blobLines = broker.auditLines().filter((l) => l.tool === 'blob_get');
    expect(blobLines.slice(-2).map((l) => [l.event, l.outcome])).toEqual([
      ['intent', undefined],
      ['outcome', 'ok'],
    ]);
    expect(blobLines.at(-1)).toMatchObject({ sha256: sha256(content), size: content.length });
  });

  it('a ticket is single use, refused with the agent token, and dead after 60 s', async () => {
    await broker.fake.writeFile('Once/a.txt', 'a');
    await broker.grant([{ path: 'Once', mode: 'read' }]);
    const first = await call(transfer, 'read', { instance: 'personal', path: 'Once/a.txt' });
    expect((await getBlob(broker.url, first.blob_url as string, AGENT_TOKEN)).status).toBe(401);
    expect((await getBlob(broker.url, first.blob_url as string, TRANSFER_TOKEN)).status).toBe(200);
    const again = await getBlob(broker.url, first.blob_url as string, TRANSFER_TOKEN);
    expect(again.status).toBe(404);
    expect(JSON.parse(again.body.toString())).toMatchObject({
      status: 'refused',
      code: 'ticket_invalid',
    });

    const late = await call(transfer, 'read', { instance: 'personal', path: 'Once/a.txt' });
    broker.clock.offset += 61_000;
    try {
      expect((await getBlob(broker.url, late.blob_url as string, TRANSFER_TOKEN)).status).toBe(404);
    } finally {
      broker.clock.offset -= 61_000;
    }
  });

  it('HEAD is 405 and spends nothing; an HTTP/1.0 client gets the bytes with a Content-Length', async () => {
    await broker.fake.writeFile('Old/a.txt', 'hello');
    await broker.grant([{ path: 'Old', mode: 'read' }]);
    const answer = await call(transfer, 'read', { instance: 'personal', path: 'Old/a.txt' });
    broker.fake.requests.length = 0;
    const auth = `Authorization: Bearer ${TRANSFER_TOKEN}`;
    const head = await rawExchange(
      broker.url,
      `HEAD ${answer.blob_url as string} HTTP/1.1\r\nHost: localhost\r\n${auth}\r\nConnection: close\r\n\r\n`,
    );
    expect(head.status).toBe(405);
    expect(broker.fake.requests).toEqual([]);
    const old = await rawExchange(
      broker.url,
      `GET ${answer.blob_url as string} HTTP/1.0\r\nHost: localhost\r\n${auth}\r\n\r\n`,
    );
    expect(old.status).toBe(200);
    expect(old.reply).toMatch(/content-length: 5\r\n/i);
    expect(old.reply.endsWith('\r\n\r\nhello')).toBe(true);
  });

  it('a forged or malformed ticket is refused', async () => {
    for (const ticket of ['A'.repeat(43), 'x', `${'A'.repeat(42)}%2F`, '..%2F..%2Fhealth']) {
      const res = await getBlob(broker.url, `/transfer/blobs/${ticket}`, TRANSFER_TOKEN);
      expect([404]).toContain(res.status);
    }
  });

  it('refused without a grant; a folder or a missing file is refused at the blob GET, before any byte', async () => {
    await broker.fake.mkdir('RdDir/sub');
    await broker.grant([{ path: 'RdDir', mode: 'read' }]);
    expect(await call(transfer, 'read', { instance: 'personal', path: 'Other/x' })).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
    const blob = async (path: string) => {
      const ticket = await call(transfer, 'read', { instance: 'personal', path });
      expect(ticket).toMatchObject({ status: 'ok', path });
      const got = await getBlob(broker.url, String(ticket.blob_url), TRANSFER_TOKEN);
      expect(got.headers['content-type']).toMatch(/^application\/json/);
      return { status: got.status, envelope: JSON.parse(got.body.toString()) as unknown };
    };
    // The words the read tool used when it checked the path itself.
    expect(await blob('RdDir/sub')).toEqual({
      status: 403,
      envelope: {
        status: 'refused',
        code: 'not_a_file',
        message: '"RdDir/sub" is a folder, not a file; only files can be transferred',
      },
    });
    expect(await blob('RdDir/none')).toEqual({
      status: 403,
      envelope: {
        status: 'refused',
        code: 'not_found',
        message: "'RdDir/none' does not exist on instance 'personal': check the path with list",
      },
    });
  });

  it('a file replaced by a folder between the read tool and the blob GET is refused', async () => {
    await broker.fake.writeFile('Swap/a.txt', 'a file for now');
    await broker.grant([{ path: 'Swap', mode: 'read' }]);
    const ticket = await call(transfer, 'read', { instance: 'personal', path: 'Swap/a.txt' });
    await rm(join(broker.fake.root, 'Swap', 'a.txt'));
    await broker.fake.mkdir('Swap/a.txt/inner');
    const got = await getBlob(broker.url, String(ticket.blob_url), TRANSFER_TOKEN);
    expect(got.status).toBe(403);
    expect(JSON.parse(got.body.toString())).toMatchObject({
      status: 'refused',
      code: 'not_a_file',
    });
    expect(got.body.toString()).not.toContain('WebDAV');
  });

  it('If-None-Match the current etag: 304 with the etag, no body, audited as unchanged', async () => {
    await broker.fake.writeFile('Inm/a.txt', 'held by the client');
    await broker.grant([{ path: 'Inm', mode: 'read' }]);
    const etag = await etagOnServer('Inm/a.txt');
    const ticket = await call(transfer, 'read', { instance: 'personal', path: 'Inm/a.txt' });
    broker.fake.requests.length = 0;
    const blobLines = (): Record<string, unknown>[] =>
      broker.auditLines().filter((l) => l.tool === 'blob_get');
    const before = blobLines().length;
    const got = await getBlob(broker.url, String(ticket.blob_url), TRANSFER_TOKEN, {
      headers: { 'if-none-match': String(etag) },
    });
    expect(got.status).toBe(304);
    expect(got.headers.etag).toBe(etag);
    expect(got.received).toBe(0);
    // Relayed as one conditional GET, answered without a body.
    expect(
      broker.fake.requests.map((r) => [r.method, r.headers['if-none-match'], r.status]),
    ).toEqual([['GET', etag, 304]]);
    // Waits for this download's intent and outcome (the sweep may write a summary of
    // earlier refusals after them, so the last line need not be one of them).
    await until('the blob_get outcome line', () => blobLines().length >= before + 2, undefined, 10);
    const lines = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_get')
      .slice(-2);
    expect(lines[0]).toMatchObject({ event: 'intent', if_none_match: etag });
    expect(lines[1]).toMatchObject({ event: 'outcome', outcome: 'ok', unchanged: true, etag });

    // Another etag: the whole file, with the current etag.
    const again = await call(transfer, 'read', { instance: 'personal', path: 'Inm/a.txt' });
    const full = await getBlob(broker.url, String(again.blob_url), TRANSFER_TOKEN, {
      headers: { 'if-none-match': '"0123456789abc"' },
    });
    expect(full.status).toBe(200);
    expect(full.body.toString()).toBe('held by the client');
    expect(full.headers.etag).toBe(etag);
  });

  it('attack: an If-None-Match that is not one quoted etag is refused before any request, the ticket kept', async () => {
    await broker.fake.writeFile('InmBad/a.txt', 'x');
    await broker.grant([{ path: 'InmBad', mode: 'read' }]);
    const ticket = await call(transfer, 'read', { instance: 'personal', path: 'InmBad/a.txt' });
    const url = String(ticket.blob_url);
    broker.fake.requests.length = 0;
    for (const bad of [`"${'a'.repeat(199)}"`, 'e1', 'W/"e1"', '*', '"a", "b"', '""', '"a b"']) {
      const got = await getBlob(broker.url, url, TRANSFER_TOKEN, {
        headers: { 'if-none-match': bad },
      });
      expect(got.status, bad).toBe(400);
      expect(JSON.parse(got.body.toString()), bad).toMatchObject({
        status: 'refused',
        code: 'invalid_arguments',
      });
    }
    // CR or LF never make it into a header value: Node's parser refuses the request.
    for (const bad of ['"e1"\rX-Injected: 1', '"e1\u0000"']) {
      const raw = await rawExchange(
        broker.url,
        `GET ${url} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TRANSFER_TOKEN}\r\nIf-None-Match: ${bad}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw.status, JSON.stringify(bad)).toBe(400);
    }
    expect(broker.fake.requests).toEqual([]);
    // Nothing was spent: the ticket still streams the file.
    const got = await getBlob(broker.url, url, TRANSFER_TOKEN);
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe('x');
  });

  it('a ticket dies with its grant: revoked before use → refused grant_revoked, nothing read', async () => {
    await broker.fake.writeFile('Rv/a.txt', 'a');
    const id = await broker.grant([{ path: 'Rv', mode: 'read' }]);
    const answer = await call(transfer, 'read', { instance: 'personal', path: 'Rv/a.txt' });
    await broker.gateway.decide(`revoke ${id}`);
    broker.fake.requests.length = 0;
    const blob = await getBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN);
    expect(blob.status).toBe(403);
    const body = JSON.parse(blob.body.toString()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'refused', code: 'grant_revoked', ended_by: 'owner' });
    expect(String(body.message)).toContain('revoked by the owner at');
    expect(broker.fake.requests.filter((r) => r.method === 'GET')).toEqual([]);
    // Spent: the second try is an unknown ticket, as any used one.
    expect((await getBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN)).status).toBe(404);
  });

  it('a ticket whose grant expired says grant_expired, with when', async () => {
    await broker.fake.writeFile('Ex/a.txt', 'a');
    const id = await broker.request(await broker.agent(), [{ path: 'Ex', mode: 'read' }]);
    await broker.gateway.decide(`approve ${id} 20s`);
    const answer = await call(transfer, 'read', { instance: 'personal', path: 'Ex/a.txt' });
    const expiry = broker.store.getRequest(id)?.items[0]?.grant?.expiresAt as number;
    broker.clock.offset += 30_000; // the grant is over, the 60 s ticket is not
    try {
      await broker.server.sweep();
      const blob = await getBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN);
      const body = JSON.parse(blob.body.toString()) as Record<string, unknown>;
      expect(body).toMatchObject({
        status: 'refused',
        code: 'grant_expired',
        ended_at: new Date(expiry).toISOString(),
      });
      expect(String(body.message)).toContain(`expired at ${new Date(expiry).toISOString()}`);
    } finally {
      broker.clock.offset -= 30_000;
    }
  });
});

describe('infrastructure errors', () => {
  it('the blob GET, write, checkout and checkin answer error (with retry advice) when Nextcloud fails', async () => {
    await broker.fake.writeFile('Inf/a.txt', 'a');
    await broker.grant([{ path: 'Inf', mode: 'write' }]);
    const out = await call(transfer, 'checkout', { instance: 'personal', path: 'Inf/a.txt' });
    const read = await call(transfer, 'read', { instance: 'personal', path: 'Inf/a.txt' });
    broker.fake.faults.status = 503;
    // The read tool asks Nextcloud nothing; its blob GET meets the failure.
    const blob = await getBlob(broker.url, String(read.blob_url), TRANSFER_TOKEN);
    expect(blob.status).toBe(502);
    const answers = [
      JSON.parse(blob.body.toString()) as Record<string, unknown>,
      await call(transfer, 'write', {
        instance: 'personal',
        path: 'Inf/b.txt',
        size: 1,
        if_none_match: '*',
      }),
      await call(transfer, 'checkout', { instance: 'personal', path: 'Inf/a.txt' }),
      await call(transfer, 'checkin', {
        instance: 'personal',
        path: 'Inf/a.txt',
        lock_token: out.lock_token,
        size: 1,
      }),
    ];
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 'error', retry: true });
      expect(typeof answer.code).toBe('string');
    }
  });
});

describe('write: never clobbers', () => {
  it('creates with if_none_match "*", verified by re-reading', async () => {
    await broker.fake.mkdir('Up');
    await broker.grant([{ path: 'Up', mode: 'write' }]);
    const content = randomBytes(300_000);
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Up/new.bin',
      size: content.length,
      if_none_match: '*',
    });
    expect(answer.status).toBe('ok');
    const put = await putBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN, content);
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({
      status: 'ok',
      sha256: sha256(content),
      size: content.length,
      verified: true,
    });
    expect((await broker.fake.readFile('Up/new.bin'))?.equals(content)).toBe(true);
  });

  it('refuses (conflict) to create over an existing file, and to replace with a stale etag', async () => {
    await broker.fake.writeFile('Up2/x.txt', 'old');
    await broker.grant([{ path: 'Up2', mode: 'write' }]);
    expect(
      await call(transfer, 'write', {
        instance: 'personal',
        path: 'Up2/x.txt',
        size: 3,
        if_none_match: '*',
      }),
    ).toMatchObject({ status: 'refused', code: 'conflict' });
    expect(
      await call(transfer, 'write', {
        instance: 'personal',
        path: 'Up2/x.txt',
        size: 3,
        if_match: '"stale"',
      }),
    ).toMatchObject({ status: 'refused', code: 'conflict' });
    const replace = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Up2/x.txt',
      size: 3,
      if_match: await etagOnServer('Up2/x.txt'),
    });
    expect(replace.status).toBe('ok');
    // The file changes between the ticket and the PUT: Nextcloud's 412 wins.
    await broker.fake.writeFile('Up2/x.txt', 'changed');
    const put = await putBlob(
      broker.url,
      replace.blob_url as string,
      TRANSFER_TOKEN,
      Buffer.from('new'),
    );
    expect(put.status).toBe(409);
    expect(put.json).toMatchObject({ status: 'refused', code: 'conflict' });
    expect((await broker.fake.readFile('Up2/x.txt'))?.toString()).toBe('changed');
  });

  it('refuses a write that states no precondition, or two', async () => {
    await broker.grant([{ path: 'Up3', mode: 'write' }]);
    expect(
      await call(transfer, 'write', { instance: 'personal', path: 'Up3/a', size: 1 }),
    ).toMatchObject({
      status: 'refused',
      code: 'invalid_arguments',
    });
    expect(
      await call(transfer, 'write', {
        instance: 'personal',
        path: 'Up3/a',
        size: 1,
        if_none_match: '*',
        if_match: '"e"',
      }),
    ).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
  });

  it('refuses a PUT whose Content-Length differs from the ticket', async () => {
    await broker.fake.mkdir('Up4');
    await broker.grant([{ path: 'Up4', mode: 'write' }]);
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Up4/a',
      size: 5,
      if_none_match: '*',
    });
    const put = await putBlob(
      broker.url,
      answer.blob_url as string,
      TRANSFER_TOKEN,
      Buffer.from('123'),
    );
    expect(put.status).toBe(400);
    expect(put.json).toMatchObject({ status: 'refused', code: 'invalid_arguments' });
    expect(await broker.fake.exists('Up4/a')).toBe(false);
  });

  it('a server without X-Hash: the file is read back, a flipped byte is caught, and the answer says how it was verified', async () => {
    await broker.fake.mkdir('Up5');
    await broker.grant([{ path: 'Up5', mode: 'write' }]);
    const content = Buffer.from('verify me please');
    const ticket = async (path: string) =>
      call(transfer, 'write', {
        instance: 'personal',
        path,
        size: content.length,
        if_none_match: '*',
      });
    broker.fake.faults.xHash = 'none';
    try {
      const fine = await putBlob(
        broker.url,
        (await ticket('Up5/ok.txt')).blob_url as string,
        TRANSFER_TOKEN,
        content,
      );
      expect(fine.json).toMatchObject({ status: 'ok', verified: true });
      expect(JSON.stringify(fine.json.warnings)).toContain('reading the file back');
      broker.fake.faults.flipByte = true;
      const put = await putBlob(
        broker.url,
        (await ticket('Up5/v.txt')).blob_url as string,
        TRANSFER_TOKEN,
        content,
      );
      expect(put.status).toBe(502);
      expect(put.json).toMatchObject({
        status: 'error',
        code: 'verification_failed',
        sha256: sha256(content),
      });
    } finally {
      broker.fake.faults.xHash = 'honest';
      broker.fake.faults.flipByte = false;
    }
  });
});

describe('checkout and checkin', () => {
  it('locks, streams, checks in under the lock, verifies and unlocks', async () => {
    await broker.fake.writeFile('Co/doc.txt', 'version 1');
    await broker.grant([{ path: 'Co', mode: 'write' }]);
    const before = await etagOnServer('Co/doc.txt');
    const out = await call(transfer, 'checkout', { instance: 'personal', path: 'Co/doc.txt' });
    expect(out).toMatchObject({ status: 'ok', size: 9 });
    // Locking gave the file a new etag: the checkout answers the one under the lock.
    expect(out.etag).not.toBe(before);
    const token = out.lock_token as string;
    expect(broker.fake.lockOf('Co/doc.txt')).toMatchObject({ type: 'token', token });
    const got = await getBlob(broker.url, out.blob_url as string, TRANSFER_TOKEN);
    expect(got.body.toString()).toBe('version 1');
    expect(got.headers.etag).toBe(out.etag);

    const next = Buffer.from('version 2, longer');
    const ticket = await call(transfer, 'checkin', {
      instance: 'personal',
      path: 'Co/doc.txt',
      lock_token: token,
      size: next.length,
    });
    expect(ticket.status).toBe('ok');
    const put = await putBlob(broker.url, ticket.blob_url as string, TRANSFER_TOKEN, next);
    expect(put.json).toMatchObject({
      status: 'ok',
      sha256: sha256(next),
      verified: true,
      unlocked: true,
    });
    expect((await broker.fake.readFile('Co/doc.txt'))?.toString()).toBe('version 2, longer');
    expect(broker.fake.lockOf('Co/doc.txt')).toBeUndefined();
    // Unlocking gave the file a new etag; the answer carries that one, not the one under
    // the lock, so the agent can replace this version later.
    expect(put.json.etag).toBe(await etagOnServer('Co/doc.txt'));
    // The lock token is never written to the audit log.
    expect(JSON.stringify(broker.auditLines())).not.toContain(token);
  });

  it('refuses a lock token issued for another file', async () => {
    await broker.fake.writeFile('CoX/a.txt', 'a');
    await broker.fake.writeFile('CoX/b.txt', 'b');
    await broker.grant([{ path: 'CoX', mode: 'write' }]);
    const a = await call(transfer, 'checkout', { instance: 'personal', path: 'CoX/a.txt' });
    expect(
      await call(transfer, 'checkin', {
        instance: 'personal',
        path: 'CoX/b.txt',
        lock_token: a.lock_token,
        abandon: true,
      }),
    ).toMatchObject({ status: 'refused', code: 'lock_token_unknown' });
    expect(broker.fake.lockOf('CoX/a.txt')?.token).toBe(a.lock_token);
  });

  it('abandon releases the lock without uploading', async () => {
    await broker.fake.writeFile('Co2/doc.txt', 'v1');
    await broker.grant([{ path: 'Co2', mode: 'write' }]);
    const out = await call(transfer, 'checkout', { instance: 'personal', path: 'Co2/doc.txt' });
    const answer = await call(transfer, 'checkin', {
      instance: 'personal',
      path: 'Co2/doc.txt',
      lock_token: out.lock_token,
      abandon: true,
    });
    expect(answer).toMatchObject({ status: 'ok', unlocked: true });
    expect(broker.fake.lockOf('Co2/doc.txt')).toBeUndefined();
    expect(answer.etag).toBe(await etagOnServer('Co2/doc.txt'));
    expect(answer.etag).not.toBe(out.etag);
  });

  it('never locks a missing path (a LOCK would create it) or a folder; needs a write grant', async () => {
    await broker.fake.mkdir('Co3/dir');
    await broker.grant([{ path: 'Co3', mode: 'write' }]);
    await broker.grant([{ path: 'CoRead', mode: 'read' }]);
    broker.fake.requests.length = 0;
    expect(
      await call(transfer, 'checkout', { instance: 'personal', path: 'Co3/missing.txt' }),
    ).toMatchObject({
      status: 'refused',
      code: 'not_found',
    });
    expect(
      await call(transfer, 'checkout', { instance: 'personal', path: 'Co3/dir' }),
    ).toMatchObject({
      status: 'refused',
      code: 'not_a_file',
    });
    expect(
      await call(transfer, 'checkout', { instance: 'personal', path: 'CoRead/x' }),
    ).toMatchObject({
      status: 'refused',
      code: 'no_grant',
    });
    expect(broker.fake.requests.some((r) => r.method === 'LOCK')).toBe(false);
    expect(await broker.fake.exists('Co3/missing.txt')).toBe(false);
  });

  it('a locked file (someone else holds the lock) answers error with retry', async () => {
    await broker.fake.writeFile('Co4/doc.txt', 'x');
    await broker.grant([{ path: 'Co4', mode: 'write' }]);
    await broker.fake.lockAs('Co4/doc.txt', { type: 'token' });
    expect(
      await call(transfer, 'checkout', { instance: 'personal', path: 'Co4/doc.txt' }),
    ).toMatchObject({
      status: 'error',
      code: 'locked',
      retry: true,
    });
  });

  it('revoking the grant releases the checkout lock', async () => {
    await broker.fake.writeFile('Co5/doc.txt', 'x');
    const id = await broker.grant([{ path: 'Co5', mode: 'write' }]);
    const out = await call(transfer, 'checkout', { instance: 'personal', path: 'Co5/doc.txt' });
    expect(broker.fake.lockOf('Co5/doc.txt')?.token).toBe(out.lock_token);
    await broker.gateway.decide(`revoke ${id}`);
    expect(broker.fake.lockOf('Co5/doc.txt')).toBeUndefined();
    expect(
      broker
        .auditLines()
        .some((l) => l.tool === 'release_lock' && l.event === 'outcome' && l.outcome === 'ok'),
    ).toBe(true);
  });

  it('expiry (the sweep) releases the checkout lock and tells the owner', async () => {
    await broker.fake.writeFile('Co6/doc.txt', 'x');
    const id = await broker.grant([{ path: 'Co6', mode: 'write' }]);
    await call(transfer, 'checkout', { instance: 'personal', path: 'Co6/doc.txt' });
    broker.clock.offset += 25 * 3_600_000;
    try {
      await broker.server.sweep();
    } finally {
      broker.clock.offset -= 25 * 3_600_000;
    }
    expect(broker.fake.lockOf('Co6/doc.txt')).toBeUndefined();
    // Every grant of this file's tests expires at once: past the first lines, the
    // announcement names the request instead of the path.
    const named = new RegExp(`Co6|\\(requests? [0-9, ]*\\b${id}\\b`);
    expect(broker.gateway.announcements.some((a) => named.test(a))).toBe(true);
    expect(broker.auditLines().some((l) => l.event === 'expire')).toBe(true);
  });
});

describe('revocation aborts an in-flight download', () => {
  /** GETs a 24 MiB blob, revoking the grant once 256 KiB have arrived. */
  async function cutDownload(
    dir: string,
    headers: Record<string, string> = {},
  ): Promise<{ received: number; complete: boolean; trailers: Record<string, string> }> {
    const content = randomBytes(24 * 1024 * 1024);
    await broker.fake.writeFile(`${dir}/large.bin`, content);
    const id = await broker.grant([{ path: dir, mode: 'read' }]);
    const answer = await call(transfer, 'read', { instance: 'personal', path: `${dir}/large.bin` });
    const result = await new Promise<{
      received: number;
      complete: boolean;
      trailers: Record<string, string>;
    }>((resolve) => {
      const req = request(
        new URL(answer.blob_url as string, broker.url),
        { headers: { authorization: `Bearer ${TRANSFER_TOKEN}`, ...headers } },
        (res) => {
          let received = 0;
          let revoked = false;
          const done = (): void =>
            resolve({
              received,
              complete: res.complete,
              trailers: res.trailers as Record<string, string>,
            });
          res.on('data', (c: Buffer) => {
            received += c.length;
            if (!revoked && received > 256 * 1024) {
              revoked = true;
              // Slow reader: pause so backpressure holds the stream open, then revoke.
              res.pause();
              void broker.gateway.decide(`revoke ${id}`).then(() => res.resume());
            }
          });
          res.on('end', done);
          res.on('error', done);
          res.on('aborted', done);
        },
      );
      req.on('error', () => resolve({ received: -1, complete: false, trailers: {} }));
      req.end();
    });
    expect(result.received).toBeLessThan(content.length);
    expect(result.trailers['x-broker-sha256']).toBeUndefined();
    expect(broker.server.inFlight.size).toBe(0);
    return result;
  }

  const lastGetOutcome = () =>
    broker
      .auditLines()
      .filter((l) => l.tool === 'blob_get' && l.event === 'outcome')
      .at(-1);

  it('cuts the stream mid-transfer: no trailers, outcome refused (grant_revoked)', async () => {
    const result = await cutDownload('Big');
    expect(result.complete).toBe(false);
    // Audited before the stream was cut.
    expect(lastGetOutcome()).toMatchObject({ outcome: 'refused', code: 'grant_revoked' });
  });

  it('to a client that reads trailers (TE: trailers), the end of the stream says why', async () => {
    const result = await cutDownload('BigTe', { te: 'trailers' });
    // The head had gone out (200), so the stream ends with the envelope, never a checksum.
    expect(result.complete).toBe(true);
    const cut = JSON.parse(result.trailers['x-broker-envelope'] ?? '{}') as Record<string, unknown>;
    expect(cut).toMatchObject({ status: 'refused', code: 'grant_revoked' });
    expect(lastGetOutcome()).toMatchObject({ outcome: 'refused', code: cut.code });
  });
});

describe('revocation aborts an in-flight upload', () => {
  it('cuts the upload: refused (grant_revoked), nothing stored', async () => {
    await broker.fake.mkdir('BigUp');
    const id = await broker.grant([{ path: 'BigUp', mode: 'write' }]);
    const size = 8 * 1024 * 1024;
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path: 'BigUp/up.bin',
      size,
      if_none_match: '*',
    });
    const result = await new Promise<{ status: number; body: string }>((resolve) => {
      const req = request(new URL(answer.blob_url as string, broker.url), {
        method: 'PUT',
        headers: { authorization: `Bearer ${TRANSFER_TOKEN}`, 'content-length': String(size) },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', () => resolve({ status: -1, body: '' }));
      // Send the first megabyte, revoke, then keep sending slowly.
      req.write(randomBytes(1024 * 1024));
      setTimeout(() => {
        void broker.gateway.decide(`revoke ${id}`).then(() => {
          const more = setInterval(() => {
            if (req.destroyed || !req.write(randomBytes(64 * 1024))) clearInterval(more);
          }, 20);
          setTimeout(() => clearInterval(more), 2_000);
        });
      }, 100);
    });
    expect(result.status).toBe(403);
    expect(JSON.parse(result.body)).toMatchObject({ status: 'refused', code: 'grant_revoked' });
    await new Promise((r) => setTimeout(r, 100));
    expect(await broker.fake.exists('BigUp/up.bin')).toBe(false);
    const outcome = broker
      .auditLines()
      .filter((l) => l.tool === 'blob_put' && l.event === 'outcome')
      .at(-1);
    expect(outcome).toMatchObject({ outcome: 'refused', code: 'grant_revoked' });
    expect(broker.server.inFlight.size).toBe(0);
  });
});

describe('revocation during the verifying read-back of an upload', () => {
  it('says the file was stored (never "refused, nothing happened")', async () => {
    await broker.fake.mkdir('Late');
    const id = await broker.grant([{ path: 'Late', mode: 'write' }]);
    const content = Buffer.from('landed before the revoke');
    const answer = await call(transfer, 'write', {
      instance: 'personal',
      path: 'Late/f.txt',
      size: content.length,
      if_none_match: '*',
    });
    // A server that answers no X-Hash gets the upload read back. Every Nextcloud answer
    // takes 300 ms: the revoke lands while the read-back waits.
    broker.fake.faults.xHash = 'none';
    broker.fake.faults.slowMs = 300;
    const seen = broker.fake.requests.length;
    const watcher = setInterval(() => {
      const readBack = broker.fake.requests
        .slice(seen)
        .some((r) => r.method === 'GET' && r.path.includes('/Late/f.txt'));
      if (readBack) {
        clearInterval(watcher);
        void broker.gateway.decide(`revoke ${id}`);
      }
    }, 5);
    try {
      const put = await putBlob(broker.url, answer.blob_url as string, TRANSFER_TOKEN, content);
      expect(put.json).toMatchObject({
        status: 'refused',
        code: 'grant_revoked',
        stored: true,
        sha256: sha256(content),
      });
      expect(String((put.json as { message: string }).message)).toContain('was stored');
    } finally {
      clearInterval(watcher);
      broker.fake.faults.slowMs = 0;
      broker.fake.faults.xHash = 'honest';
    }
    expect((await broker.fake.readFile('Late/f.txt'))?.toString()).toBe(content.toString());
  });
});
