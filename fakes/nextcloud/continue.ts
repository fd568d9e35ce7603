/**
 * `Expect: 100-continue` as Apache + PHP do it: the interim 100 goes out only when
 * the handler starts reading the body, so a request refused early (412, 423, 404 …)
 * gets its final answer without the client ever sending the body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

const waiting = new WeakMap<IncomingMessage, ServerResponse>();

export function expectContinue(req: IncomingMessage, res: ServerResponse): void {
  waiting.set(req, res);
}

/** Call before reading a request body. */
export function sendContinue(req: IncomingMessage): void {
  const res = waiting.get(req);
  if (!res) return;
  waiting.delete(req);
  if (!res.headersSent) res.writeContinue();
}

/** Whether the body of req was never asked for (a 100 was owed but not sent). */
export function bodyNeverRequested(req: IncomingMessage): boolean {
  return waiting.has(req);
}
