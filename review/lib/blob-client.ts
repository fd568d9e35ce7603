/**
 * A blob client for the probes that controls every byte: downloads that pause to let
 * something happen mid-stream, uploads that stop half way, and what the broker then
 * answered (or that it cut the connection).
 */
import { request } from 'node:http';

export interface DownloadResult {
  readonly status: number;
  readonly received: number;
  /** The response ended normally with the sha256 trailer. */
  readonly complete: boolean;
  readonly body: string;
}

/**
 * GETs a blob; after `pauseAfter` bytes it pauses, awaits `midway()`, then resumes.
 * Resolves when the response ends or is cut.
 */
export function getBlob(
  base: string,
  blobUrl: string,
  token: string,
  opts: { pauseAfter?: number; midway?: () => Promise<void> } = {},
): Promise<DownloadResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let paused = false;
    let settled = false;
    const done = (complete: boolean, status: number): void => {
      if (settled) return;
      settled = true;
      const body = Buffer.concat(chunks).toString('utf8');
      resolve({ status, received, complete, body: body.length > 2000 ? '' : body });
    };
    const req = request(
      new URL(blobUrl, base),
      { headers: { authorization: `Bearer ${token}` } },
      (res) => {
        res.on('data', (c: Buffer) => {
          received += c.length;
          if (received <= 2000) chunks.push(c);
          if (!paused && opts.pauseAfter !== undefined && received >= opts.pauseAfter) {
            paused = true;
            res.pause();
            void (opts.midway?.() ?? Promise.resolve()).then(() => res.resume());
          }
        });
        res.on('end', () =>
          done(
            res.complete && typeof res.trailers['x-broker-sha256'] === 'string',
            res.statusCode ?? 0,
          ),
        );
        res.on('aborted', () => done(false, res.statusCode ?? 0));
        res.on('error', () => done(false, res.statusCode ?? 0));
        res.on('close', () => done(false, res.statusCode ?? 0));
      },
    );
    req.on('error', () => done(false, 0));
    req.end();
  });
}

export interface UploadResult {
  /** 0 when the broker cut the connection without answering. */
  readonly status: number;
  readonly code: string | undefined;
}

/**
 * PUTs `size` bytes announced, sends the first `sendFirst`, awaits `midway()`, then
 * sends the rest (if the connection still stands). Resolves with the broker's answer.
 */
export function putBlob(
  base: string,
  blobUrl: string,
  token: string,
  content: Buffer,
  opts: { sendFirst?: number; midway?: () => Promise<void> } = {},
): Promise<UploadResult> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: UploadResult): void => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    const req = request(
      new URL(blobUrl, base),
      {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/octet-stream',
          'content-length': String(content.length),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          done({ status: res.statusCode ?? 0, code });
        });
        res.on('error', () => done({ status: res.statusCode ?? 0, code: undefined }));
      },
    );
    req.on('error', () => done({ status: 0, code: undefined }));
    const first = opts.sendFirst ?? content.length;
    req.write(content.subarray(0, first), () => {
      void (opts.midway?.() ?? Promise.resolve()).then(() => {
        if (!req.destroyed) req.end(content.subarray(first));
      });
    });
  });
}
