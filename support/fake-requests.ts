/**
 * A hook on the fake Nextcloud's request log, for tests that must act at the moment a
 * request arrives (before the fake answers it): a revoke between the last chunk and the
 * MOVE, a slow server for exactly the PUT under test.
 */
import type { FakeNextcloud, RecordedRequest } from '../fakes/nextcloud.js';

/**
 * Runs `fn` once, when the fake receives the first request that `matches`, before it
 * answers it (a fault set in `fn` applies to that request). Returns the undo.
 */
export function onRequest(
  fake: FakeNextcloud,
  matches: (r: RecordedRequest) => boolean,
  fn: () => void,
): () => void {
  const requests = fake.requests;
  const push = requests.push.bind(requests);
  let done = false;
  requests.push = (...items) => {
    if (!done && items.some(matches)) {
      done = true;
      fn();
    }
    return push(...items);
  };
  return () => {
    requests.push = push;
  };
}

/**
 * The owner's own client (not the broker) deletes `path` on the fake, with the account's
 * app password: the item goes to the trash bin as any delete of theirs. Returns the status.
 */
export async function ownerDeletes(
  fake: FakeNextcloud,
  password: string,
  path: string,
): Promise<number> {
  const res = await fetch(`${fake.url}/remote.php/dav/files/${fake.user}/${path}`, {
    method: 'DELETE',
    headers: {
      authorization: `Basic ${Buffer.from(`${fake.user}:${password}`).toString('base64')}`,
    },
  });
  return res.status;
}

/**
 * The owner's own sync client writes `content` to `path` with the mtime it had locally
 * (`X-OC-Mtime`, unix seconds), as a desktop client does. Returns the status.
 */
export async function ownerWritesAt(
  fake: FakeNextcloud,
  password: string,
  path: string,
  content: string,
  mtime: number,
): Promise<number> {
  const res = await fetch(`${fake.url}/remote.php/dav/files/${fake.user}/${path}`, {
    method: 'PUT',
    headers: {
      authorization: `Basic ${Buffer.from(`${fake.user}:${password}`).toString('base64')}`,
      'x-oc-mtime': String(mtime),
    },
    body: content,
  });
  return res.status;
}
