/**
 * Attacks on the life of a checkout lock (issue: a checkout lock outlived its grant after
 * a restart, and a release that failed was dropped): the lock is kept beside the grants,
 * released after a restart when its grant is revoked or has expired meanwhile, released
 * again with back-off until Nextcloud confirms it (each try audited), shown to the owner
 * in `status`, and a LOCK that Nextcloud answered without locking hands out nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  RELEASE_RETRY_FIRST_MS,
  RELEASE_RETRY_LAPSED_MS,
  RELEASE_RETRY_MAX_MS,
  releaseRetryDelay,
} from '../../broker/operations/checkouts.js';
import { H, startBroker, type Broker } from '../../support/daemon.js';
import { call } from '../../support/mcp.js';

let open: Broker[] = [];
afterEach(async () => {
  for (const b of open) await b.close();
  open = [];
});

async function broker(): Promise<Broker> {
  const b = await startBroker({ persist: true });
  open.push(b);
  return b;
}

async function restart(b: Broker): Promise<Broker> {
  const next = await b.restart();
  open.push(next);
  return next;
}

/** A checked-out file under a write grant on `folder`; returns the request and the token. */
async function checkedOut(b: Broker, folder: string): Promise<{ request: number; token: string }> {
  await b.fake.writeFile(`${folder}/doc.txt`, 'v1');
  const request = await b.grant([{ path: folder, mode: 'write' }]);
  const out = await call(await b.transfer(), 'checkout', {
    instance: 'personal',
    path: `${folder}/doc.txt`,
  });
  expect(out.status).toBe('ok');
  const token = out.lock_token as string;
  expect(b.fake.lockOf(`${folder}/doc.txt`)?.token).toBe(token);
  return { request, token };
}

const releases = (b: Broker) =>
  b.auditLines().filter((l) => l.tool === 'release_lock' && l.event === 'outcome');

describe('attack: restart the broker to keep a checkout lock past its grant', () => {
  it('checkout, restart, revoke all: the lock is released and the owner writes again', async () => {
    const first = await broker();
    const { token } = await checkedOut(first, 'Held');
    const b = await restart(first);
    expect(b.store.checkoutLocks.byToken(token)?.state).toBe('held');
    await b.gateway.decide('revoke all');
    expect(b.fake.lockOf('Held/doc.txt')).toBeUndefined();
    expect(b.store.checkoutLocks.byToken(token)).toMatchObject({
      state: 'released',
      end: 'revoked',
    });
    expect(releases(b).at(-1)).toMatchObject({ outcome: 'ok', released: 'unlocked', attempt: 1 });
  });

  it('a grant that expired while the broker was down: its lock is released right after the start', async () => {
    const first = await broker();
    const { token } = await checkedOut(first, 'Lapsed');
    first.clock.offset += 25 * H;
    const b = await restart(first);
    // The first sweep runs at start; wait for it (sweeps run one after another).
    await b.server.sweep();
    expect(b.fake.lockOf('Lapsed/doc.txt')).toBeUndefined();
    expect(b.store.checkoutLocks.byToken(token)).toMatchObject({
      state: 'released',
      end: 'expired',
    });
  });

  it('a revoke the broker died before acting on: released on the next start', async () => {
    const first = await broker();
    const { token } = await checkedOut(first, 'Crash');
    // The revoke is committed, but the broker is gone before it releases anything.
    first.store.revokeAll();
    const b = await restart(first);
    await b.server.sweep();
    expect(b.fake.lockOf('Crash/doc.txt')).toBeUndefined();
    expect(b.store.checkoutLocks.byToken(token)?.end).toBe('revoked');
  });
});

describe('attack: a revoke while Nextcloud is down drops the release', () => {
  it('the release is retried with back-off, each try audited, until Nextcloud confirms it', async () => {
    const b = await broker();
    const { token } = await checkedOut(b, 'Down');
    b.fake.faults.down = true;
    const reply = await b.gateway.decide('revoke all');
    expect(reply?.text).toContain('Revoked');
    const lock = b.store.checkoutLocks.byToken(token);
    expect(lock).toMatchObject({ state: 'releasing', end: 'revoked', attempts: 1 });
    expect(lock?.lastError).toContain('cannot reach Nextcloud');
    expect(releases(b).at(-1)).toMatchObject({ outcome: 'error', attempt: 1 });
    // The owner sees it in status, with what went wrong.
    const status = await b.gateway.decide('status');
    expect(status?.text).toContain('Down/doc.txt');
    expect(status?.text).toContain('being released');
    // Not due yet: the sweep sends nothing.
    const sent = b.fake.requests.length;
    await b.server.sweep();
    expect(b.fake.requests.length).toBe(sent);
    // Still down at the next try: it fails again and waits longer.
    b.clock.offset += RELEASE_RETRY_FIRST_MS;
    await b.server.sweep();
    expect(b.store.checkoutLocks.byToken(token)?.attempts).toBe(2);
    // Nextcloud is back: the next due try releases it, and says so.
    b.fake.faults.down = false;
    b.clock.offset += 2 * RELEASE_RETRY_FIRST_MS;
    await b.server.sweep();
    expect(b.fake.lockOf('Down/doc.txt')).toBeUndefined();
    expect(b.store.checkoutLocks.byToken(token)).toMatchObject({ state: 'released', attempts: 3 });
    expect(releases(b).map((l) => [l.attempt, l.outcome])).toEqual([
      [1, 'error'],
      [2, 'error'],
      [3, 'ok'],
    ]);
    expect((await b.gateway.decide('status'))?.text).not.toContain('Down/doc.txt');
    // The lock token never reaches the audit log.
    expect(JSON.stringify(b.auditLines())).not.toContain(token);
  });

  it('the wait between tries doubles from 5 s to at most 30 s; after the LOCK ran out, 10 min', () => {
    const now = 1_000_000;
    const later = now + H;
    expect([1, 2, 3, 4, 5, 9].map((n) => releaseRetryDelay(n, now, later))).toEqual([
      5_000, 10_000, 20_000, 30_000, 30_000, 30_000,
    ]);
    expect(RELEASE_RETRY_MAX_MS).toBeLessThanOrEqual(30_000);
    expect(releaseRetryDelay(1, later, later)).toBe(RELEASE_RETRY_LAPSED_MS);
  });
});

describe('attack: a lock the owner removed makes UNLOCK answer 500', () => {
  it('the release reads the lock properties: the token holds nothing, so it is released', async () => {
    const b = await broker();
    const { token } = await checkedOut(b, 'Broken');
    // The owner breaks the checkout from the web UI (OCS DELETE): our token holds nothing.
    expect(await ocsUnlock(b, 'Broken/doc.txt')).toBe(200);
    expect(b.fake.lockOf('Broken/doc.txt')).toBeUndefined();
    await b.gateway.decide('revoke all');
    const unlock = b.fake.requests.filter((r) => r.method === 'UNLOCK').at(-1);
    expect(unlock).toBeDefined();
    expect(b.store.checkoutLocks.byToken(token)?.state).toBe('released');
    expect(releases(b).at(-1)).toMatchObject({ outcome: 'ok', released: 'not_held' });
  });
});

/** The owner's OCS DELETE of the lock on `path` (files_lock's web UI unlock). */
async function ocsUnlock(b: Broker, path: string): Promise<number> {
  const stat = await fetch(`${b.fake.url}/remote.php/dav/files/${b.fake.user}/${path}`, {
    method: 'PROPFIND',
    headers: {
      authorization: `Basic ${Buffer.from(`${b.fake.user}:${b.fake.password}`).toString('base64')}`,
      depth: '0',
    },
    body: '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>',
  });
  const fileId = /<oc:fileid>(\d+)</.exec(await stat.text())?.[1];
  const res = await fetch(`${b.fake.url}/ocs/v2.php/apps/files_lock/lock/${fileId}?format=json`, {
    method: 'DELETE',
    headers: {
      authorization: `Basic ${Buffer.from(`${b.fake.user}:${b.fake.password}`).toString('base64')}`,
      'ocs-apirequest': 'true',
    },
  });
  return res.status;
}

describe('attack: a LOCK answered 200 over the owner’s own user lock', () => {
  it('checkout is refused (the file is locked by its owner) and hands out nothing', async () => {
    const b = await broker();
    await b.fake.writeFile('Mine/doc.txt', 'v1');
    await b.grant([{ path: 'Mine', mode: 'write' }]);
    const userLock = await b.fake.lockAs('Mine/doc.txt', { type: 'user' });
    const out = await call(await b.transfer(), 'checkout', {
      instance: 'personal',
      path: 'Mine/doc.txt',
    });
    expect(out).toMatchObject({ status: 'refused', code: 'locked' });
    expect(String(out.message)).toContain('locked by its owner');
    expect(out.lock_token).toBeUndefined();
    expect(out.blob_url).toBeUndefined();
    // Nextcloud did answer the LOCK with a token; the broker confirmed there was no lock.
    expect(b.fake.requests.some((r) => r.method === 'LOCK')).toBe(true);
    expect(b.fake.lockOf('Mine/doc.txt')).toMatchObject({ type: 'user', token: userLock });
    expect(b.store.openCheckoutLocks()).toEqual([]);
    expect((await b.gateway.decide('status'))?.text).not.toContain('Mine/doc.txt');
  });
});

describe('the owner sees held locks in status', () => {
  it('each lock with its instance, path, request and time left', async () => {
    const b = await broker();
    const { request } = await checkedOut(b, 'Shown');
    const status = await b.gateway.decide('status');
    expect(status?.text).toContain('Checkout locks on Nextcloud (1)');
    expect(status?.text).toContain('`Shown/doc.txt`');
    expect(status?.text).toContain(`(request ${request})`);
    expect(status?.text).toMatch(/locked, 2[34]h( \d+m)? left/);
    expect(status?.html).toContain('<code>Shown/doc.txt</code>');
  });
});
