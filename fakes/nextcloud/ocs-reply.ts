/**
 * The OCS envelope every OCS answer of the fake is wrapped in (JSON with `?format=json`,
 * else XML), and what an OCS handler is given.
 */
import type { IncomingMessage } from 'node:http';
import type { Reply } from './reply.js';
import type { FakeState } from './state.js';
import { escapeXml } from './xml.js';

export interface OcsContext {
  state: FakeState;
  reply: Reply;
  req: IncomingMessage;
  query: URLSearchParams;
  /** Segments after `/ocs/v2.php/` (decoded). */
  segments: string[];
  user: string | undefined;
}

/** `?format=json`, or no format and an Accept header that names JSON. */
export function asksForJson(req: IncomingMessage): boolean {
  const format = new URL(req.url ?? '/', 'http://fake').searchParams.get('format');
  return (
    format === 'json' ||
    (format === null && (req.headers.accept ?? '').includes('application/json'))
  );
}

function wantsJson(ctx: OcsContext): boolean {
  return asksForJson(ctx.req);
}

function toXml(value: unknown, indent: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object') return escapeXml(String(value));
  const entries = Array.isArray(value)
    ? value.map((v) => ['element', v] as const)
    : Object.entries(value as Record<string, unknown>);
  return (
    '\n' +
    entries
      .map(([k, v]) => {
        const inner = toXml(v, indent + ' ');
        return inner === ''
          ? `${indent}<${k}/>`
          : `${indent}<${k}>${inner}${inner.startsWith('\n') ? indent : ''}</${k}>`;
      })
      .join('\n') +
    '\n'
  );
}

/** An OCS v2 answer: the HTTP status mirrors the OCS status code, unless one is given. */
export function ocsReply(
  ctx: Pick<OcsContext, 'reply' | 'req' | 'query'>,
  status: number,
  message: string,
  data: unknown,
  statuscode = status,
): void {
  const meta = {
    status: status < 300 ? 'ok' : 'failure',
    statuscode,
    message: status < 300 ? message : message + ctx.reply.leak(),
  };
  if (wantsJson(ctx as OcsContext)) {
    ctx.reply.json(status, { ocs: { meta, data } });
  } else {
    ctx.reply.xml(status, `<ocs>${toXml({ meta, data }, ' ')}</ocs>`);
  }
}
