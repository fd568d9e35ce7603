/**
 * Redeeming blob tickets: the streaming operations behind `GET|PUT /transfer/blobs/<ticket>`.
 *
 * Content streams end to end with constant memory: Nextcloud → hash → client on GET,
 * client → hash → Nextcloud on PUT, through `stream.pipeline` (backpressure respected,
 * nothing buffered whole). The sha256 is computed while streaming and reported: as
 * trailers on GET, in the answer on PUT, after Nextcloud's own hash of what it stored
 * matched (an upload commits once: see store-upload.ts). Each redemption passes the pipeline again (wall, intent,
 * live-grant check bound to the ticket's grants), and a grant ending mid-stream aborts
 * the stream. The HTTP side (status codes, headers, trailers) is surfaces/blobs.ts.
 */
import type { Readable, Writable } from 'node:stream';
import type { CallContext } from '../base/call.js';
import { failure, type Envelope } from '../base/envelope.js';
import type { Checkouts } from './checkouts.js';
import { ETAG_FORM, isQuotedEtag } from '../base/etag.js';
import {
  BLOB_SHA256_AT_END_HEADER,
  BLOB_SHA256_HEADER,
  SHA256_AT_END_BYTES,
  SHA256_HEX,
} from '../base/protocol.js';
import { uploadEffect } from './effects.js';
import { relayHashing } from './hashing.js';
import { isNextcloudError } from './nextcloud-errors.js';
import { OperationRefusal, type Outcome, type Pipeline } from './pipeline.js';
import type { SpaceGuard } from './space-guard.js';
import { storeUpload, type Stored } from './store-upload.js';
import type { Ticket, TicketBook, TicketKind } from './tickets.js';
import { notAFile } from './transfer.js';

export interface BlobDeps {
  readonly pipeline: Pipeline;
  readonly tickets: TicketBook;
  readonly checkouts: Checkouts;
  /** Holds each upload's bytes against the account's space until it settles. */
  readonly space: SpaceGuard;
}

/** Where a download goes: the surface's response. */
export interface DownloadSink {
  /** The ticket was good: the transfer begins (arm the idle timeout). */
  redeemed(): void;
  /** Nextcloud answered: send the head; returns where the bytes go. */
  start(head: { size: number | null; etag: string }): Writable;
  /** The file still has the etag the client sent: answer "not modified", no bytes. */
  unchanged(head: { etag: string }): void;
  /** Every byte went out: their sha256 and count. */
  finish(sent: { sha256: string; size: number }): void;
  /** The client went away. */
  readonly gone: boolean;
}

/** A download's outcome: the bytes went out, or the client's copy is current. */
export type Downloaded =
  | { readonly unchanged: false; sha256: string; size: number; etag: string }
  | { readonly unchanged: true; etag: string };

/** Where an upload comes from: the surface's request. */
export interface UploadSource {
  /** The ticket was good: the transfer begins (arm the idle timeout). */
  redeemed(): void;
  readonly body: Readable;
  /** The announced length (Content-Length), undefined when there is none. */
  readonly length: number | undefined;
  /** The whole body arrived. */
  readonly complete: boolean;
  /** The client's connection closed: it can no longer hear the answer. */
  readonly gone: boolean;
  /** The body's sha256 as the request's BLOB_SHA256_HEADER declares it, if it does. */
  readonly declaredSha256?: string | undefined;
  /** BLOB_SHA256_AT_END_HEADER as sent (`1`: the sha256 follows the file's bytes), if it was. */
  readonly sha256AtEnd?: string | undefined;
}

export interface Uploaded extends Omit<Stored, 'warnings'> {
  readonly kind: 'write' | 'checkin';
  readonly unlocked: boolean;
}

/** An upload's outcome; `bodyUnread` when it was refused before the body was read. */
export type UploadOutcome = Outcome<Uploaded> & { readonly bodyUnread?: true };

const TICKET_INVALID =
  'ticket unknown, already used or expired (a ticket is good once, for 60 s); run the broker command again';

function clientGone(): OperationRefusal {
  return new OperationRefusal(
    failure(
      'aborted',
      'the connection closed before the transfer finished; nothing is confirmed',
      true,
    ),
  );
}

export class BlobTransfers {
  readonly #deps: BlobDeps;

  constructor(deps: BlobDeps) {
    this.#deps = deps;
  }

  /**
   * GET: redeems a read ticket and streams the file into `sink`, or, when `ifNoneMatch`
   * (an etag the client holds) is still the file's, tells the sink it is unchanged.
   */
  async download(
    ctx: CallContext,
    id: string,
    sink: DownloadSink,
    ifNoneMatch?: string,
  ): Promise<Outcome<Downloaded>> {
    // Security: the client's etag goes on to Nextcloud in a header: refuse a malformed
    // one before the ticket is spent (readStream checks it again).
    if (ifNoneMatch !== undefined && !isQuotedEtag(ifNoneMatch)) {
      return {
        ok: false,
        envelope: await this.#deps.pipeline.refuse(
          ctx,
          'invalid_arguments',
          `If-None-Match must be ${ETAG_FORM}, as the blob GET's ETag gave it; send it as received or leave it out`,
        ),
      };
    }
    const redeemed = await this.#redeem(ctx, id, ['read']);
    if (redeemed.ticket === undefined) return { ok: false, envelope: redeemed.envelope };
    const { ticket } = redeemed;
    sink.redeemed();
    return this.#deps.pipeline.run(
      ctx,
      { op: 'read', instance: ticket.instance, path: ticket.path },
      async (client, allowed): Promise<Downloaded> => {
        const path = allowed.paths[0] ?? ticket.path;
        const source = await client
          .readStream(path, { signal: allowed.signal, ifNoneMatch })
          .catch((error: unknown) => {
            // The read tool no longer stats: a folder is refused here, in its words.
            if (isNextcloudError(error) && error.code === 'is_folder') throw notAFile(path);
            throw error;
          });
        if (source.unchanged) {
          sink.unchanged({ etag: source.etag });
          return { unchanged: true, etag: source.etag };
        }
        const out = sink.start({ size: source.size, etag: source.etag });
        let sent: { sha256: string; size: number };
        try {
          sent = await relayHashing(source.stream, out, allowed.signal);
        } catch (error) {
          if (allowed.signal.aborted) throw allowed.signal.reason;
          if (sink.gone) throw clientGone();
          throw error;
        }
        if (source.size !== null && sent.size !== source.size) {
          throw new OperationRefusal(
            failure(
              'verification_failed',
              'Nextcloud sent fewer or more bytes than announced; discard the copy',
              true,
            ),
          );
        }
        sink.finish(sent);
        return { unchanged: false, ...sent, etag: source.etag };
      },
      {
        boundGrants: ticket.grantIds,
        ...(ifNoneMatch === undefined ? {} : { intent: { if_none_match: ifNoneMatch } }),
        describe: (v) =>
          v.unchanged
            ? { unchanged: true, etag: v.etag }
            : { sha256: v.sha256, size: v.size, etag: v.etag },
      },
    );
  }

  /** PUT: redeems a write or checkin ticket, streams the body to Nextcloud, verifies it. */
  async upload(ctx: CallContext, id: string, source: UploadSource): Promise<UploadOutcome> {
    const { pipeline, checkouts } = this.#deps;
    const unread = async (code: 'invalid_arguments', message: string): Promise<UploadOutcome> => ({
      ok: false,
      envelope: await pipeline.refuse(ctx, code, message),
      bodyUnread: true,
    });
    const length = source.length;
    if (length === undefined) {
      return unread(
        'invalid_arguments',
        'Content-Length is required: send the exact size of the file (no chunked uploads)',
      );
    }
    const atEnd = source.sha256AtEnd;
    if (atEnd !== undefined && atEnd !== '1') {
      return unread(
        'invalid_arguments',
        `${BLOB_SHA256_AT_END_HEADER} must be 1 (the body's sha256 follows its bytes) or absent`,
      );
    }
    const declaresAtEnd = atEnd === '1';
    const redeemed = await this.#redeem(ctx, id, ['write', 'checkin']);
    if (redeemed.ticket === undefined) {
      return { ok: false, envelope: redeemed.envelope, bodyUnread: true };
    }
    const { ticket } = redeemed;
    if ((ticket.size ?? 0) + (declaresAtEnd ? SHA256_AT_END_BYTES : 0) !== length) {
      return unread(
        'invalid_arguments',
        `this ticket is for exactly ${ticket.size} bytes${declaresAtEnd ? ` and the ${SHA256_AT_END_BYTES} digits of their sha256 after them` : ''} but Content-Length is ${length}; call the tool again with the right size`,
      );
    }
    const header = source.declaredSha256;
    if (header !== undefined && !SHA256_HEX.test(header)) {
      return unread(
        'invalid_arguments',
        `${BLOB_SHA256_HEADER} must be the body's sha256 as 64 lowercase hex digits`,
      );
    }
    // Security: one declaration per body. Two that differ are refused, never one picked.
    if (header !== undefined && ticket.sha256 !== undefined && header !== ticket.sha256) {
      return unread(
        'invalid_arguments',
        `${BLOB_SHA256_HEADER} differs from the sha256 the tool call declared for this body; send one of them, the same`,
      );
    }
    const declared = ticket.sha256 ?? header;
    source.redeemed();
    const outcome = await pipeline.run(
      ctx,
      { op: 'write', instance: ticket.instance, path: ticket.path },
      async (client, allowed): Promise<Uploaded & { warnings: string[] }> => {
        const stored = await storeUpload(
          this.#deps.space,
          client,
          allowed,
          declared === undefined ? ticket : { ...ticket, sha256: declared },
          {
            body: source.body,
            sha256AtEnd: declaresAtEnd,
            // Read when asked, as the source's own are: a client may go away meanwhile.
            get complete() {
              return source.complete;
            },
            get gone() {
              return source.gone;
            },
          },
        );
        let unlocked = false;
        let etag = stored.etag;
        if (ticket.kind === 'checkin' && ticket.lockToken !== undefined) {
          // The UNLOCK gives the file a new etag: hand out that one (see unlock.ts).
          ({ etag } = await checkouts.releaseOwn(client, stored.path, ticket.lockToken, 'checkin'));
          unlocked = true;
        }
        const kind = ticket.kind === 'checkin' ? 'checkin' : 'write';
        return { ...stored, kind, etag, unlocked };
      },
      {
        boundGrants: ticket.grantIds,
        intent: {
          size: ticket.size,
          kind: ticket.kind,
          ...(ticket.issuedBy === undefined ? {} : { ticket_call: ticket.issuedBy }),
          ...(declared === undefined ? {} : { declared_sha256: declared }),
          ...(declaresAtEnd ? { declared_at_end: true } : {}),
        },
        describe: (v) => ({
          sha256: v.sha256,
          size: v.size,
          verified: true,
          verified_by: v.verifiedBy,
          chunked: v.chunked,
          unlocked: v.unlocked,
          // What undo needs: the content it replaced (a version now), or a new file.
          effect: uploadEffect(ticket.replaces, v.fileId),
        }),
      },
    );
    if (!outcome.ok) return outcome;
    const { warnings, ...value } = outcome.value;
    return { ok: true, value, warnings: [...warnings, ...outcome.warnings] };
  }

  async #redeem(
    ctx: CallContext,
    id: string,
    kinds: readonly TicketKind[],
  ): Promise<{ ticket: Ticket } | { ticket: undefined; envelope: Envelope }> {
    // Security: single use — the ticket is gone from the book whatever happens next.
    const ticket = this.#deps.tickets.take(id);
    if (ticket === undefined) {
      // A ticket whose grant ended says so (grant_revoked / grant_expired), like the wall.
      const ended = this.#deps.tickets.takeEnded(id);
      const ending =
        ended !== undefined && kinds.includes(ended.kind)
          ? this.#deps.pipeline.endingOf(ended.grantIds)
          : undefined;
      if (ended !== undefined && ending !== undefined) {
        return {
          ticket: undefined,
          envelope: await this.#deps.pipeline.refuseEnded(ctx, ended, ending),
        };
      }
    }
    if (ticket === undefined || !kinds.includes(ticket.kind)) {
      return {
        ticket: undefined,
        envelope: await this.#deps.pipeline.refuse(ctx, 'ticket_invalid', TICKET_INVALID),
      };
    }
    return { ticket };
  }
}
