/** Reading small request bodies (PROPFIND, LOCK); large ones are refused. */
import type { IncomingMessage } from 'node:http';
import { sendContinue } from '../continue.js';

const MAX_XML_BODY = 1024 * 1024;

export async function readSmallBody(req: IncomingMessage): Promise<string | undefined> {
  sendContinue(req);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_XML_BODY) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
