/**
 * Ways the fake answers: Sabre XML errors, Apache HTML errors, OCS envelopes. With
 * the `echoAuth` fault every error body also carries the credentials, so the
 * broker's scrubbing can be tested.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { FakeState } from './state.js';
import { escapeXml } from './xml.js';

/** Exception class names Nextcloud puts in `<s:exception>`. */
export const EX = {
  notFound: 'Sabre\\DAV\\Exception\\NotFound',
  forbidden: 'Sabre\\DAV\\Exception\\Forbidden',
  conflict: 'Sabre\\DAV\\Exception\\Conflict',
  methodNotAllowed: 'Sabre\\DAV\\Exception\\MethodNotAllowed',
  preconditionFailed: 'Sabre\\DAV\\Exception\\PreconditionFailed',
  badRequest: 'Sabre\\DAV\\Exception\\BadRequest',
  notImplemented: 'Sabre\\DAV\\Exception\\NotImplemented',
  locked: 'Sabre\\DAV\\Exception\\Locked',
  conflictingLock: 'Sabre\\DAV\\Exception\\ConflictingLock',
  notAuthenticated: 'Sabre\\DAV\\Exception\\NotAuthenticated',
  rangeNotSatisfiable: 'Sabre\\DAV\\Exception\\RequestedRangeNotSatisfiable',
  unsupportedMediaType: 'Sabre\\DAV\\Exception\\UnsupportedMediaType',
  serviceUnavailable: 'Sabre\\DAV\\Exception\\ServiceUnavailable',
  insufficientStorage: 'Sabre\\DAV\\Exception\\InsufficientStorage',
  generic: 'Sabre\\DAV\\Exception',
  invalidPath: 'OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath',
  fileLocked: 'OCA\\DAV\\Connector\\Sabre\\Exception\\FileLocked',
  maxDelay: 'OCP\\Security\\Bruteforce\\MaxDelayReached',
} as const;

const XML_TYPE = 'application/xml; charset=utf-8';

export class Reply {
  readonly #state: FakeState;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    state: FakeState,
  ) {
    this.#state = state;
  }

  /** What `echoAuth` leaks: the Authorization header and the password in several forms. */
  leak(): string {
    if (!this.#state.faults.echoAuth) return '';
    const { user, password } = this.#state;
    const auth = this.req.headers.authorization ?? '';
    return (
      ` [debug: Authorization: ${auth}; password: ${password};` +
      ` urlencoded: ${encodeURIComponent(password)}; login: ${user}:${password};` +
      ` base64: ${Buffer.from(`${user}:${password}`).toString('base64')}]`
    );
  }

  send(status: number, body: string | Buffer, headers: OutgoingHttpHeaders = {}): void {
    const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    this.res.writeHead(status, { ...headers, 'Content-Length': buf.length });
    this.res.end(this.req.method === 'HEAD' ? undefined : buf);
  }

  empty(status: number, headers: OutgoingHttpHeaders = {}): void {
    this.send(status, '', headers);
  }

  xml(status: number, body: string, headers: OutgoingHttpHeaders = {}): void {
    this.send(status, `<?xml version="1.0" encoding="utf-8"?>\n${body}\n`, {
      'Content-Type': XML_TYPE,
      ...headers,
    });
  }

  /** A Sabre error body: `<d:error><s:exception>…</s:exception><s:message>…</s:message></d:error>`. */
  sabre(
    status: number,
    exception: string,
    message: string,
    headers: OutgoingHttpHeaders = {},
    extraXml = '',
  ): void {
    this.xml(
      status,
      '<d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns">\n' +
        `  <s:exception>${escapeXml(exception)}</s:exception>\n` +
        `  <s:message>${escapeXml(message + this.leak())}</s:message>\n` +
        extraXml +
        '</d:error>',
      headers,
    );
  }

  /** Apache's own error page (the request never reached PHP). */
  apache(status: number): void {
    const title = `${status} ${STATUS_CODES[status] ?? ''}`;
    this.send(
      status,
      `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>${title}</title>\n` +
        `</head><body>\n<h1>${STATUS_CODES[status] ?? ''}</h1>\n` +
        `<p>${escapeXml(this.leak())}</p>\n<hr>\n<address>Apache/2.4.62 (Debian) Server at 127.0.0.1</address>\n</body></html>\n`,
      { 'Content-Type': 'text/html; charset=iso-8859-1' },
    );
  }

  json(status: number, value: unknown, headers: OutgoingHttpHeaders = {}): void {
    this.send(status, JSON.stringify(value), {
      'Content-Type': 'application/json; charset=utf-8',
      ...headers,
    });
  }
}
