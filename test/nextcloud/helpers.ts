/** Shared setup for the client tests against the fake Nextcloud (real sockets). */
import { Readable } from 'node:stream';
import { expect } from 'vitest';
import {
  NextcloudClient,
  NextcloudError,
  type NextcloudClientDeps,
} from '../../broker/nextcloud/index.js';
import { startFakeNextcloud, type FakeNextcloud, type Series } from '../../fakes/nextcloud.js';

export interface Rig {
  fake: FakeNextcloud;
  client: NextcloudClient;
  /** A client with other deps or credentials against the same fake. */
  clientWith(deps?: NextcloudClientDeps, password?: string): NextcloudClient;
  /** Requests the fake received since the last call, as `METHOD path`. */
  sent(): string[];
  close(): Promise<void>;
}

export async function startRig(deps: NextcloudClientDeps = {}, series?: Series): Promise<Rig> {
  const fake = await startFakeNextcloud({
    password: 'Zq7rT-kP2mX-9vLwB-a+b/c%d',
    ...(series === undefined ? {} : { series }),
  });
  const clients: NextcloudClient[] = [];
  const clientWith = (d: NextcloudClientDeps = deps, password = fake.password) => {
    const c = new NextcloudClient(
      { name: 'home', url: fake.url, username: fake.user, app_password: password },
      d,
    );
    clients.push(c);
    return c;
  };
  const client = clientWith();
  let seen = 0;
  return {
    fake,
    client,
    clientWith,
    sent() {
      const out = fake.requests.slice(seen).map((r) => `${r.method} ${r.path}`);
      seen = fake.requests.length;
      return out;
    },
    async close() {
      for (const c of clients) c.close();
      await fake.close();
    },
  };
}

/** Await a rejection and check it is a NextcloudError with this code. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
  retry?: boolean,
): Promise<NextcloudError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected ${code}`).toBeInstanceOf(NextcloudError);
  const err = caught as NextcloudError;
  expect(err.code, err.message).toBe(code);
  if (retry !== undefined) expect(err.retry).toBe(retry);
  expect(err.message).not.toMatch(/[\r\n]/);
  return err;
}

export function body(text: string | Buffer): Readable {
  return Readable.from([typeof text === 'string' ? Buffer.from(text) : text]);
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export const DAV = '/remote.php/dav/files/alice';

/** A PUT that sets the file's mtime (`X-OC-Mtime`), as another client writes; the file id. */
export async function writeAt(
  fake: FakeNextcloud,
  path: string,
  content: string,
  mtime: number,
): Promise<string> {
  const res = await fetch(`${fake.url}${DAV}/${path}`, {
    method: 'PUT',
    headers: {
      Authorization: `Basic ${Buffer.from(`${fake.user}:${fake.password}`).toString('base64')}`,
      'X-OC-Mtime': String(mtime),
    },
    body: content,
  });
  expect(res.status).toBeLessThan(300);
  return /^0*(\d+)oc/.exec(res.headers.get('oc-fileid') ?? '')?.[1] ?? '';
}
