/**
 * What an agent's CLI does on the transfer surface, in one call each, for the tests of
 * what an owner can take back (undo): a push that creates or replaces a file (the
 * `write` ticket, then the blob PUT with the body's sha256), and a checkout's lock.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { fetchedEtag, putBlob } from './blobs.js';
import { call } from './mcp.js';
import { TRANSFER_TOKEN } from './tokens.js';

export const sha256 = (body: Buffer | string): string =>
  createHash('sha256').update(body).digest('hex');

/**
 * `broker push`: a new file (`etag` undefined), or over the one whose etag the agent
 * fetched; answers the blob PUT's answer, and throws unless both calls said ok.
 */
export async function push(
  base: string,
  transfer: Client,
  path: string,
  content: string | Buffer,
  etag?: string,
  instance = 'personal',
): Promise<Record<string, unknown>> {
  const body = Buffer.from(content);
  const ticket = await call(transfer, 'write', {
    instance,
    path,
    size: body.length,
    sha256: sha256(body),
    ...(etag === undefined ? { if_none_match: '*' } : { if_match: etag }),
  });
  if (ticket.status !== 'ok')
    throw new Error(`push ${path}: write answered ${JSON.stringify(ticket)}`);
  const put = await putBlob(base, String(ticket.blob_url), TRANSFER_TOKEN, body);
  if (put.json.status !== 'ok')
    throw new Error(`push ${path}: PUT answered ${JSON.stringify(put.json)}`);
  return put.json;
}

/** `broker fetch` then `broker push`: replace the file with `content`. */
export async function replace(
  base: string,
  transfer: Client,
  path: string,
  content: string | Buffer,
  instance = 'personal',
): Promise<Record<string, unknown>> {
  const etag = await fetchedEtag(base, transfer, path, { instance });
  return push(base, transfer, path, content, etag, instance);
}

/** `broker checkout`: the lock token (the download ticket is left unused). */
export async function checkout(
  transfer: Client,
  path: string,
  instance = 'personal',
): Promise<string> {
  const answer = await call(transfer, 'checkout', { instance, path });
  if (answer.status !== 'ok') throw new Error(`checkout ${path}: ${JSON.stringify(answer)}`);
  return String(answer.lock_token);
}

/** `broker checkin`: `content` up under the checkout's lock, then the lock released. */
export async function checkin(
  base: string,
  transfer: Client,
  path: string,
  token: string,
  content: string | Buffer,
  instance = 'personal',
): Promise<Record<string, unknown>> {
  const body = Buffer.from(content);
  const ticket = await call(transfer, 'checkin', {
    instance,
    path,
    lock_token: token,
    size: body.length,
    sha256: sha256(body),
  });
  if (ticket.status !== 'ok') throw new Error(`checkin ${path}: ${JSON.stringify(ticket)}`);
  const put = await putBlob(base, String(ticket.blob_url), TRANSFER_TOKEN, body);
  if (put.json.status !== 'ok')
    throw new Error(`checkin ${path}: PUT answered ${JSON.stringify(put.json)}`);
  return put.json;
}
