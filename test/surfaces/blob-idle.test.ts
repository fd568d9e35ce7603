/**
 * Attacks on the blob streams' idle timeout (server.request_timeout_ms) and on "the answer
 * says exactly what is on the server" while a client waits. The timeout is for a client
 * that stops sending or reading, never for one waiting on the broker: its whole body has
 * arrived and Nextcloud has not yet asked for it (busy, slow to send `100 Continue`), or
 * Nextcloud is slow to start a download. What happens meanwhile (a revoke, the client
 * going away) is decided when the last bytes leave for Nextcloud, not before. Found by
 * the soak: a checkin stored on Nextcloud, answered to its client as a reset connection.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getBlob, putBlob, startPartialPut } from '../../support/blobs.js';
import { startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';
import { TRANSFER_TOKEN } from '../../support/tokens.js';
import { onRequest } from '../../support/fake-requests.js';
import { until } from '../../support/until.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

/** The broker's idle timeout for a blob stream (server.request_timeout_ms). */
const IDLE_MS = 300;
/** How long the fake Nextcloud keeps an upload's PUT waiting: well past IDLE_MS. */
const BUSY_MS = 3 * IDLE_MS;

let broker: Broker;
let transfer: Client;

beforeAll(async () => {
  broker = await startBroker({ requestTimeoutMs: IDLE_MS });
  transfer = await broker.transfer();
});
afterAll(async () => {
  await broker.close();
});
beforeEach(() => {
  broker.fake.reset();
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** A write grant on `folder` (its request id) and a create ticket for `path`. */
async function ticketFor(folder: string, path: string, body: Buffer) {
  await broker.fake.mkdir(folder);
  const id = await broker.grant([{ path: folder, mode: 'write' }]);
  const answer = await call(transfer, 'write', {
    instance: 'personal',
    path,
    size: body.length,
    if_none_match: '*',
    sha256: sha256(body),
  });
  expect(answer.status).toBe('ok');
  return { id, blob: String(answer.blob_url) };
}

/**
 * The first request of `method` is held for BUSY_MS as it reaches the fake, before
 * Nextcloud reads it (so, for a PUT, before it asks for the body), and `then` runs.
 * Returns the undo.
 */
function holdFirst(method: 'PUT' | 'GET', then: () => void = () => undefined): () => void {
  const undo = onRequest(
    broker.fake,
    (r) => r.method === method,
    () => {
      broker.fake.faults.slowMs = BUSY_MS;
      then();
    },
  );
  return () => {
    undo();
    broker.fake.faults.slowMs = 0;
  };
}

/** The audit log's outcome of the blob upload to `path`, once there is one. */
function outcomeOf(path: string) {
  return broker
    .auditLines()
    .find((l) => l.tool === 'blob_put' && l.event === 'outcome' && l.path === path);
}

describe('a client whose upload waits on a busy Nextcloud', () => {
  it.each([
    ['its whole body arrived', 'Wait', Buffer.from('sent at once, answered late')],
    // Larger than every buffer between the client and a PUT that is not sending yet.
    ['Nextcloud has yet to take its large body', 'Big', Buffer.alloc(8 * 1024 * 1024, 5)],
  ])('gets its answer, however long past the idle timeout: %s', async (_, folder, body) => {
    const { blob } = await ticketFor(folder, `${folder}/a.bin`, body);
    const restore = holdFirst('PUT');
    try {
      const put = await putBlob(broker.url, blob, TRANSFER_TOKEN, body);
      expect(put).toMatchObject({ status: 200, json: { status: 'ok', sha256: sha256(body) } });
    } finally {
      restore();
    }
    expect((await broker.fake.readFile(`${folder}/a.bin`))?.equals(body)).toBe(true);
  });
});

describe('a revoke before Nextcloud asks for the body', () => {
  it('is refused at the commit point: nothing stored, and the answer says so', async () => {
    const body = Buffer.from('revoked while queued');
    const { id, blob } = await ticketFor('Rq', 'Rq/a.txt', body);
    // The revoke reaches the grant store only, not the running upload's abort signal:
    // only a check made when the last bytes leave can stop it.
    const restore = holdFirst('PUT', () => void broker.store.revokeRequest(id));
    try {
      const put = await putBlob(broker.url, blob, TRANSFER_TOKEN, body);
      expect(put.json).toMatchObject({ status: 'refused', code: 'grant_revoked' });
      expect(String(put.json.message)).toContain('nothing was written');
    } finally {
      restore();
    }
    expect(await broker.fake.exists('Rq/a.txt')).toBe(false);
    expect(outcomeOf('Rq/a.txt')).toMatchObject({ outcome: 'refused', code: 'grant_revoked' });
  });
});

describe('a client that goes away after its whole body, before Nextcloud asks for it', () => {
  it('gets no commit: it could never learn that the file changed', async () => {
    const body = Buffer.from('sent whole, then gone');
    const { blob } = await ticketFor('Gone', 'Gone/a.txt', body);
    let client: ReturnType<typeof startPartialPut> | undefined;
    const restore = holdFirst('PUT', () => client?.destroy());
    try {
      client = startPartialPut(broker.url, blob, TRANSFER_TOKEN, body, body.length);
      await until('the upload to be answered in the audit log', () => !!outcomeOf('Gone/a.txt'));
    } finally {
      restore();
    }
    expect(await broker.fake.exists('Gone/a.txt')).toBe(false);
    expect(outcomeOf('Gone/a.txt')).toMatchObject({ outcome: 'error', code: 'aborted' });
  });
});

describe('a client waiting for a download while Nextcloud is busy', () => {
  const readTicket = async (path: string): Promise<string> => {
    const answer = await call(transfer, 'read', { instance: 'personal', path });
    expect(answer.status).toBe('ok');
    return String(answer.blob_url);
  };

  it('gets the whole file, however long past the idle timeout Nextcloud takes', async () => {
    await broker.fake.writeFile('Dl/a.txt', 'worth the wait');
    await broker.grant([{ path: 'Dl', mode: 'read' }]);
    const blob = await readTicket('Dl/a.txt');
    const restore = holdFirst('GET');
    try {
      const got = await getBlob(broker.url, blob, TRANSFER_TOKEN);
      expect(got).toMatchObject({ status: 200, complete: true });
      expect(got.body.toString()).toBe('worth the wait');
    } finally {
      restore();
    }
  });

  it('that goes away before the bytes start: the download is answered at once as cut', async () => {
    await broker.fake.writeFile('Dg/a.txt', 'nobody left to read this');
    await broker.grant([{ path: 'Dg', mode: 'read' }]);
    const blob = await readTicket('Dg/a.txt');
    const answered = (): boolean =>
      broker
        .auditLines()
        .some((l) => l.tool === 'blob_get' && l.event === 'outcome' && l.path === 'Dg/a.txt');
    const cut = new AbortController();
    const restore = holdFirst('GET', () => cut.abort());
    try {
      const got = await getBlob(broker.url, blob, TRANSFER_TOKEN, { signal: cut.signal });
      expect(got.status).toBe(0);
      // Well before Nextcloud's own idle timeout (5 s) would end a relay left waiting.
      await until('the download to be answered in the audit log', answered, BUSY_MS + 1_000);
    } finally {
      restore();
    }
    expect(
      broker
        .auditLines()
        .find((l) => l.tool === 'blob_get' && l.event === 'outcome' && l.path === 'Dg/a.txt'),
    ).toMatchObject({ outcome: 'error', code: 'aborted' });
  });
});

describe('a client that stops half way', () => {
  it('sending: it is cut after the idle timeout, and nothing is stored', async () => {
    const body = Buffer.alloc(64 * 1024, 1);
    const { blob } = await ticketFor('Stall', 'Stall/a.bin', body);
    const client = startPartialPut(broker.url, blob, TRANSFER_TOKEN, body, body.length / 2);
    try {
      await until(
        'the stalled upload to be answered in the audit log',
        () => !!outcomeOf('Stall/a.bin'),
        4 * IDLE_MS,
      );
    } finally {
      client.destroy();
    }
    expect(outcomeOf('Stall/a.bin')).toMatchObject({ outcome: 'error', code: 'aborted' });
    expect(await broker.fake.exists('Stall/a.bin')).toBe(false);
  });

  it('reading: it is cut after the idle timeout, and answered as cut', async () => {
    // Larger than every buffer between the broker and a client that reads nothing.
    await broker.fake.writeFile('Slow/a.bin', Buffer.alloc(32 * 1024 * 1024, 2));
    await broker.grant([{ path: 'Slow', mode: 'read' }]);
    const answer = await call(transfer, 'read', { instance: 'personal', path: 'Slow/a.bin' });
    let readAgain = (): void => undefined;
    const got = getBlob(broker.url, String(answer.blob_url), TRANSFER_TOKEN, {
      pauseAfter: 1,
      midway: () => new Promise<void>((resolve) => (readAgain = resolve)),
    });
    const outcome = () =>
      broker
        .auditLines()
        .find((l) => l.tool === 'blob_get' && l.event === 'outcome' && l.path === 'Slow/a.bin');
    try {
      await until(
        'the stalled download to be answered in the audit log',
        () => !!outcome(),
        4 * IDLE_MS,
      );
    } finally {
      readAgain();
    }
    expect(outcome()).toMatchObject({ outcome: 'error', code: 'aborted' });
    const cut = await got;
    expect(cut.complete).toBe(false);
    expect(cut.received).toBeLessThan(32 * 1024 * 1024);
  });
});
