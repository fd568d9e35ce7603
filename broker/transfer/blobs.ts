/**
 * The blob endpoint: `GET|PUT /transfer/blobs/<ticket>` (transfer token required).
 *
 * Content streams end to end with constant memory: Nextcloud → hash → client on GET,
 * client → hash → Nextcloud on PUT, through `stream.pipeline` (backpressure respected,
 * nothing buffered whole). The sha256 is computed while streaming and reported: as
 * HTTP trailers on GET (`x-broker-sha256`, `x-broker-size`), in the JSON answer on PUT,
 * after the broker re-read what Nextcloud stored and compared size and sha256.
 * Each redemption passes the pipeline again (wall, intent, live-grant check bound to
 * the ticket's grants), and a grant ending mid-stream aborts the stream.
 */
import type { Request, Response } from 'express';
import { pipeline as pipe } from 'node:stream/promises';
import { OperationRefusal, type Pipeline } from '../operations.js';
import { isNextcloudError } from '../operations/nextcloud-errors.js';
import type { Logger } from '../base/log.js';
import { failure, ok, refused, withWarnings, type Envelope } from '../base/envelope.js';
import type { CheckoutTable } from './checkouts.js';
import { digestStream, HashingStream } from './hashing.js';
import type { Ticket, TicketBook } from './tickets.js';
import { unlockWithEtag } from './unlock.js';
import { scrubDeep } from '../base/scrub.js';
import { type CallContext } from '../base/call.js';

export interface BlobDeps {
  readonly pipeline: Pipeline;
  readonly tickets: TicketBook;
  readonly checkouts: CheckoutTable;
  readonly logger: Logger;
  readonly scrub: (text: string) => string;
  readonly correlationId: () => string;
  /** A blob stream with no progress for this long is dropped. */
  readonly idleTimeoutMs: number;
}

/** The HTTP status carrying an envelope on the blob endpoint. */
export function blobStatus(envelope: Envelope): number {
  if (envelope.status === 'ok') return 200;
  if (envelope.status === 'refused') {
    if (envelope.code === 'ticket_invalid') return 404;
    if (envelope.code === 'conflict') return 409;
    if (envelope.code === 'invalid_arguments') return 400;
    if (envelope.code === 'too_large') return 413;
    return 403;
  }
  return envelope.code === 'internal' ? 500 : 502;
}

const TICKET_INVALID = 'ticket unknown, already used or expired; call the tool again for a new one';

function clientGone(): OperationRefusal {
  return new OperationRefusal(
    failure(
      'aborted',
      'the connection closed before the transfer finished; nothing is confirmed',
      true,
    ),
  );
}

function contentLength(req: Request): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^[0-9]{1,16}$/.test(header)) return undefined;
  const n = Number(header);
  return Number.isSafeInteger(n) ? n : undefined;
}

export class BlobEndpoint {
  constructor(private readonly deps: BlobDeps) {}

  private ctx(tool: string): CallContext {
    return { surface: 'transfer', tool, correlationId: this.deps.correlationId() };
  }

  private send(res: Response, envelope: Envelope, close = false): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (close) res.set('Connection', 'close');
    res.status(blobStatus(envelope)).json(scrubDeep(envelope, this.deps.scrub));
  }

  private async redeem(
    ctx: CallContext,
    id: string,
    kinds: readonly Ticket['kind'][],
  ): Promise<{ ticket: Ticket } | { ticket: undefined; envelope: Envelope }> {
    // Security: single use — the ticket is gone from the book whatever happens next.
    const ticket = this.deps.tickets.take(id);
    if (ticket === undefined || !kinds.includes(ticket.kind)) {
      return {
        ticket: undefined,
        envelope: await this.deps.pipeline.refuse(ctx, 'ticket_invalid', TICKET_INVALID),
      };
    }
    return { ticket };
  }

  async download(req: Request, res: Response, id: string): Promise<void> {
    const ctx = this.ctx('blob_get');
    const redeemed = await this.redeem(ctx, id, ['read']);
    if (redeemed.ticket === undefined) return this.send(res, redeemed.envelope);
    const { ticket } = redeemed;
    res.setTimeout(this.deps.idleTimeoutMs, () => res.destroy());
    const outcome = await this.deps.pipeline.run(
      ctx,
      { op: 'read', instance: ticket.instance, path: ticket.path },
      async (client, allowed) => {
        const source = await client.readStream(allowed.paths[0] ?? ticket.path);
        const hasher = new HashingStream();
        // Trailers need chunked encoding (HTTP/1.1). An HTTP/1.0 client gets the bytes with
        // a Content-Length (a cut stream shows as short) and no sha256 trailer.
        const chunked = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1;
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'cache-control': 'no-store',
          ...(chunked
            ? { trailer: 'x-broker-sha256, x-broker-size' }
            : source.size === null
              ? {}
              : { 'content-length': String(source.size) }),
          ...(source.size === null ? {} : { 'x-broker-size': String(source.size) }),
          ...(source.etag === null ? {} : { etag: source.etag }),
        });
        try {
          await pipe(source.stream, hasher, res, { signal: allowed.signal, end: false });
        } catch (error) {
          if (allowed.signal.aborted) throw allowed.signal.reason;
          if (res.destroyed) throw clientGone();
          throw error;
        }
        if (source.size !== null && hasher.bytes !== source.size) {
          throw new OperationRefusal(
            failure(
              'verification_failed',
              'Nextcloud sent fewer or more bytes than announced; discard the copy',
              true,
            ),
          );
        }
        const sha256 = hasher.sha256();
        if (chunked)
          res.addTrailers({ 'x-broker-sha256': sha256, 'x-broker-size': String(hasher.bytes) });
        res.end();
        return { sha256, size: hasher.bytes, etag: source.etag };
      },
      { boundGrants: ticket.grantIds, describe: (v) => ({ sha256: v.sha256, size: v.size }) },
    );
    if (!outcome.ok) this.send(res, outcome.envelope);
  }

  async upload(req: Request, res: Response, id: string): Promise<void> {
    const ctx = this.ctx('blob_put');
    const length = contentLength(req);
    if (length === undefined) {
      const envelope = await this.deps.pipeline.refuse(
        ctx,
        'invalid_arguments',
        'Content-Length is required: send the exact size of the file (no chunked uploads)',
      );
      return this.send(res, envelope, true);
    }
    const redeemed = await this.redeem(ctx, id, ['write', 'checkin']);
    if (redeemed.ticket === undefined) return this.send(res, redeemed.envelope, true);
    const { ticket } = redeemed;
    if (ticket.size !== length) {
      const envelope = await this.deps.pipeline.refuse(
        ctx,
        'invalid_arguments',
        `this ticket is for exactly ${ticket.size} bytes but Content-Length is ${length}; call the tool again with the right size`,
      );
      return this.send(res, envelope, true);
    }
    res.setTimeout(this.deps.idleTimeoutMs, () => res.destroy());
    const { checkouts } = this.deps;
    const outcome = await this.deps.pipeline.run(
      ctx,
      { op: 'write', instance: ticket.instance, path: ticket.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? ticket.path;
        const hasher = new HashingStream();
        // Security: without a precondition the upload is create-only; never a silent overwrite.
        const condition = ticket.condition ?? { ifNoneMatch: '*' as const };
        const piping = pipe(req, hasher, { signal: allowed.signal });
        let written: { etag: string | null };
        try {
          [written] = await Promise.all([
            client.writeStream(path, hasher, condition, ticket.size),
            piping,
          ]);
        } catch (error) {
          hasher.destroy();
          if (allowed.signal.aborted) throw allowed.signal.reason;
          if (!req.complete && !isNextcloudError(error)) throw clientGone();
          throw error;
        }
        if (hasher.bytes !== ticket.size) throw clientGone();
        const sent = { sha256: hasher.sha256(), size: hasher.bytes };
        // Verify what Nextcloud now holds, by reading it back through the same hash.
        let back: Awaited<ReturnType<typeof client.readStream>>;
        let stored: { sha256: string; size: number };
        try {
          back = await client.readStream(path);
          stored = await digestStream(back.stream, allowed.signal);
        } catch (error) {
          if (!allowed.signal.aborted) throw error;
          // Nothing is lost silently: the bytes are on Nextcloud, so the answer says so,
          // even though the grant ended before they could be read back.
          throw new OperationRefusal(
            refused(
              'grant_ended',
              `"${path}" was stored on Nextcloud (${sent.size} bytes), but the grant ended before the broker could verify it; the remote file has changed`,
              {
                hint: 'request access again, then fetch the file to see what Nextcloud holds',
                stored: true,
                sha256: sent.sha256,
                size: sent.size,
                etag: written.etag,
              },
            ),
          );
        }
        if (stored.size !== sent.size || stored.sha256 !== sent.sha256) {
          throw new OperationRefusal(
            failure(
              'verification_failed',
              `Nextcloud holds different bytes than were sent (${stored.size} of ${sent.size} bytes, sha256 differs)` +
                (ticket.kind === 'checkin'
                  ? '; the file stays checked out: check in again'
                  : '; upload again'),
              false,
              {
                sha256: sent.sha256,
                size: sent.size,
                stored_sha256: stored.sha256,
                stored_size: stored.size,
              },
            ),
          );
        }
        let unlocked = false;
        let etag = back.etag ?? written.etag;
        if (ticket.kind === 'checkin' && ticket.lockToken !== undefined) {
          // The UNLOCK gives the file a new etag: hand out that one (see unlock.ts).
          etag = await unlockWithEtag(client, path, ticket.lockToken);
          checkouts.remove(ticket.lockToken);
          unlocked = true;
        }
        return { ...sent, etag, unlocked, path };
      },
      {
        boundGrants: ticket.grantIds,
        intent: { size: ticket.size, kind: ticket.kind },
        describe: (v) => ({ sha256: v.sha256, size: v.size, verified: true, unlocked: v.unlocked }),
      },
    );
    if (!outcome.ok) return this.send(res, outcome.envelope, !req.complete);
    const v = outcome.value;
    const message =
      ticket.kind === 'checkin'
        ? `checked in "${v.path}": ${v.size} bytes stored, verified and unlocked`
        : `stored "${v.path}": ${v.size} bytes, verified`;
    this.send(
      res,
      withWarnings(
        ok(message, {
          path: v.path,
          sha256: v.sha256,
          size: v.size,
          etag: v.etag,
          verified: true,
          ...(ticket.kind === 'checkin' ? { unlocked: v.unlocked } : {}),
        }),
        outcome.warnings,
      ),
    );
  }
}
