/**
 * `X-Request-Id`: the id Nextcloud gives every request (20 letters and digits; a client
 * cannot choose it), and which answers show it (observed on 34.0.1 and 29.0.5, see
 * docs/nextcloud-behaviour.md "Request ids"):
 * - WebDAV shows it only when the method ran to its end (2xx, 207): Sabre adds it after
 *   the method, so a refusal or failure (304, 401, 404, 412, 423, 5xx) has none;
 * - an OCS app's answer always shows it, whatever its status; an OCS request refused
 *   before any app answers (a wrong password, an unknown route) shows it on 34 only;
 * - status.php and Apache's own errors never do.
 * The router says which of these an answer is; every answer is stamped in one place
 * (`res.writeHead`), whichever handler writes it.
 */
import { randomInt } from 'node:crypto';
import type { ServerResponse } from 'node:http';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Which answers of this request carry the id. */
export type RequestIdRule = 'never' | 'on-success' | 'always';

export function newRequestId(): string {
  let id = '';
  for (let i = 0; i < 20; i++) id += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return id;
}

const STAMPS = new WeakMap<ServerResponse, RequestIdStamp>();

/** Sets which answers of the request `res` answers carry its id (see the rules above). */
export function requestIdRule(res: ServerResponse, rule: RequestIdRule): void {
  const stamp = STAMPS.get(res);
  if (stamp !== undefined) stamp.rule = rule;
}

/** Gives the request answered by `res` an id, shown as the rules above say; answers it. */
export function stampRequestId(res: ServerResponse): string {
  const stamp = new RequestIdStamp(newRequestId(), res);
  STAMPS.set(res, stamp);
  return stamp.id;
}

class RequestIdStamp {
  /** Set by the router once it knows what answers this request. */
  rule: RequestIdRule = 'never';

  constructor(
    readonly id: string,
    res: ServerResponse,
  ) {
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const stamped = this.rule === 'always' || (this.rule === 'on-success' && status < 300);
      if (stamped && !res.headersSent) res.setHeader('X-Request-Id', this.id);
      return (writeHead as (status: number, ...args: unknown[]) => ServerResponse)(status, ...rest);
    }) as typeof res.writeHead;
  }
}
