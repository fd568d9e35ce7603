/**
 * A real Nextcloud for the benchmarks, described by the environment as for the
 * real-server test suite (NC_URL, NC_USER, NC_APP_PASSWORD, NC_RESET; CONTRIBUTING.md,
 * "The real-server suite"): direct WebDAV requests and `curl` to it, the baselines the
 * broker's figures stand beside.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

export interface Server {
  url: string;
  user: string;
  password: string;
  reset: string | undefined;
}

export const run = promisify(execFile);

export function serverFromEnv(): Server | undefined {
  const { NC_URL: url, NC_USER: user, NC_APP_PASSWORD: password, NC_RESET: reset } = process.env;
  if (!url || !user || !password) return undefined;
  return { url: url.replace(/\/+$/, ''), user, password, reset: reset || undefined };
}

/** The WebDAV URL of `path` in the user's files. */
export function fileUrl(s: Server, path: string): string {
  return `${s.url}/remote.php/dav/files/${encodeURIComponent(s.user)}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

/** Sends one WebDAV request; throws unless the status is one of `ok`. */
export async function dav(
  s: Server,
  method: string,
  path: string,
  ok: number[],
  body?: string,
): Promise<void> {
  const res = await fetch(fileUrl(s, path), {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${s.user}:${s.password}`).toString('base64')}`,
    },
    ...(body === undefined ? {} : { body }),
  });
  await res.arrayBuffer();
  if (!ok.includes(res.status)) throw new Error(`${method} ${path}: HTTP ${res.status}`);
}

/** Leaves the server as found: emptied (NC_RESET), else without the bench's folder. */
export async function leaveServer(s: Server, folder: string): Promise<void> {
  if (s.reset !== undefined)
    await run('sh', ['-c', s.reset], { timeout: 120_000 }).catch(() => undefined);
  else await dav(s, 'DELETE', folder, [204, 404]).catch(() => undefined);
}

/** The server's largest chunk (capability `files.chunked_upload.max_size`), if it says. */
export async function serverChunkSize(s: Server): Promise<number | undefined> {
  const res = await fetch(`${s.url}/ocs/v2.php/cloud/capabilities?format=json`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${s.user}:${s.password}`).toString('base64')}`,
      'ocs-apirequest': 'true',
      accept: 'application/json',
    },
  });
  const doc = (await res.json()) as {
    ocs?: { data?: { capabilities?: { files?: { chunked_upload?: { max_size?: unknown } } } } };
  };
  const max = doc.ocs?.data?.capabilities?.files?.chunked_upload?.max_size;
  return typeof max === 'number' && max > 0 ? max : undefined;
}

/** `curl` GET of `url` into `file`, credentials on stdin (never on the command line). */
export async function curlGet(s: Server, url: string, file: string): Promise<number> {
  const started = performance.now();
  const child = spawn('curl', ['-sS', '-f', '-K', '-', '-o', file, url], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(`user = "${s.user}:${s.password}"\n`);
  const code = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolve(c ?? -1));
  });
  if (code !== 0) throw new Error(`curl GET failed (${code}): ${stderr.slice(-300)}`);
  return performance.now() - started;
}
