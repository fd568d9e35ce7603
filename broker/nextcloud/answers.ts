/**
 * What Nextcloud says of each request the broker sends, for the audit log: the
 * `X-Request-Id` it gave the request (admin_audit and Nextcloud's log file every line
 * of the request under it, and a client cannot choose it), and where the answer carries
 * them, the file's `OC-FileId` and `OC-ETag` (docs/nextcloud-behaviour.md "Request ids").
 * Nextcloud shows the id on every OCS answer and on every WebDAV answer whose method ran
 * to its end; a refused WebDAV request (404, 412, 423, …) shows none, so it yields no
 * answer here.
 *
 * The collecting point is the async scope of a call: `collect(sink, run)` hands every
 * answer of a request sent while `run` runs (by any verb, through any helper it awaits)
 * to `sink`; an answer outside every such scope goes to the connection's own sink (the
 * broker's other requests). Scopes nest; the innermost wins. The connection reports each
 * answer as it arrives (connection.ts), so a sink has every answer of the requests
 * that got one, also when `run` then fails. An answer that arrives after `run` ended (a
 * request left running) goes to the connection's own sink too: the scope's owner has
 * read its sink by then, and the answer would otherwise be recorded nowhere.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';

export interface NextcloudAnswer {
  /** `X-Request-Id`: Nextcloud's id of the request. */
  readonly requestId: string;
  readonly method: string;
  readonly status: number;
  /** The file id of `OC-FileId`, as `oc:fileid` spells it (digits, no instance suffix). */
  readonly fileId?: string;
  /** `OC-ETag`, quoted as sent. */
  readonly etag?: string;
}

export type AnswerSink = (answer: NextcloudAnswer) => void;

// Security: these values are the server's; only well-formed ones are kept, so nothing
// odd reaches the audit log through them. Nextcloud's ids are 20 letters and digits, or
// Apache mod_unique_id's (letters, digits, `@`, `-`); 128 characters is ample for both.
const REQUEST_ID = /^[A-Za-z0-9@_.+=/-]{1,128}$/;
/** Whether `id` is one this module keeps as a request id (a value read back from elsewhere). */
export function isRequestId(id: unknown): id is string {
  return typeof id === 'string' && REQUEST_ID.test(id);
}

/** `OC-FileId`: the file id padded to 8 digits, then the instance id. */
const OC_FILE_ID = /^0*(\d{1,24})oc[a-z0-9]{1,64}$/;
const QUOTED_ETAG = /^(W\/)?"[\x21\x23-\x7e]{0,200}"$/;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The file id an answer's `OC-FileId` names, as `oc:fileid` spells it; undefined if none. */
export function answeredFileId(headers: IncomingHttpHeaders): string | undefined {
  return OC_FILE_ID.exec(header(headers, 'oc-fileid') ?? '')?.[1];
}

/** What an answer says for the audit log; undefined when it shows no (well-formed) id. */
export function answerOf(
  method: string,
  status: number,
  headers: IncomingHttpHeaders,
): NextcloudAnswer | undefined {
  const requestId = header(headers, 'x-request-id');
  if (requestId === undefined || !REQUEST_ID.test(requestId)) return undefined;
  const fileId = answeredFileId(headers);
  const etag = header(headers, 'oc-etag');
  return {
    requestId,
    method,
    status,
    ...(fileId === undefined ? {} : { fileId }),
    ...(etag !== undefined && QUOTED_ETAG.test(etag) ? { etag } : {}),
  };
}

/** The scopes of one connection's answers (see the top of this file). */
export class AnswerRecorder {
  readonly #scopes = new AsyncLocalStorage<AnswerSink>();
  readonly #outside: AnswerSink | undefined;

  /** `outside`: where answers sent outside every scope go (none: they are dropped). */
  constructor(outside?: AnswerSink) {
    this.#outside = outside;
  }

  /** Runs `run`; every answer to a request it sends goes to `sink`. */
  collect<T>(sink: AnswerSink, run: () => Promise<T>): Promise<T> {
    let open = true;
    const scoped: AnswerSink = (answer) => (open ? sink : this.#outside)?.(answer);
    return this.#scopes.run(scoped, run).finally(() => {
      open = false;
    });
  }

  /** Hands one answer to the sink of the scope it was sent in. */
  record(answer: NextcloudAnswer): void {
    (this.#scopes.getStore() ?? this.#outside)?.(answer);
  }
}
