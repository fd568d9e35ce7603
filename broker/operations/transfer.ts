/**
 * The transfer surface's operations (docs/transfer-protocol.md): each tool call passes
 * the pipeline and, when allowed, issues a single-use ticket for the blob endpoint,
 * where the content streams (see blobs.ts). No content passes through MCP. Each verb
 * answers the facts of its ticket; the transfer tools word them.
 *
 * Writes never overwrite silently: creating needs `if_none_match: '*'`, replacing needs
 * the `if_match` etag that was read, and writing a checked-out file needs its lock token.
 */
import type { CallContext } from '../base/call.js';
import type { Clock } from '../base/domain.js';
import { refused } from '../base/envelope.js';
import type { Logger } from '../base/log.js';
import {
  BLOB_PATH,
  BLOB_SHA256_AT_END_HEADER,
  BLOB_SHA256_HEADER,
  type TicketView,
} from '../base/protocol.js';
import type { TransferAnswer, TransferArgs } from '../base/transfer-tools.js';
import { iso } from '../base/time.js';
import type { Checkouts } from './checkouts.js';
import { OperationRefusal, type Outcome, type Pipeline } from './pipeline.js';
import type { SpaceGuard } from './space-guard.js';
import type { WriteCondition } from '../nextcloud/client.js';
import type { Ticket, TicketBook } from './tickets.js';
import { notAFile, refuseConflict, statOrNull } from './write-conflicts.js';

export { notAFile } from './write-conflicts.js';

/** Longest LOCK the broker asks for; it also never outlives the grant. */
export const MAX_LOCK_SECONDS = 24 * 3600;

export interface TransferDeps {
  readonly pipeline: Pipeline;
  readonly tickets: TicketBook;
  readonly checkouts: Checkouts;
  readonly logger: Logger;
  readonly now: Clock;
  /** Weighs each write ticket against the account's space and the writes in flight. */
  readonly space: SpaceGuard;
}

export interface FileTicket {
  path: string;
  size: number | null;
  etag: string | null;
  ticket: TicketView;
}

export interface Checkout extends FileTicket {
  lock_token: string;
  lock_expires_at: string;
  /** How long the LOCK holds. */
  seconds: number;
}

export type Checkin =
  | { kind: 'abandoned'; path: string; etag: string | null }
  | { kind: 'ticket'; path: string; size: number; ticket: TicketView };

/** A write's arguments (`sha256`: the body's, as the client declares it; a body that differs is never committed). */
type WriteArgs = TransferArgs<'write'>;

function ticketView(ticket: Ticket, now: number): TicketView {
  return {
    ticket: ticket.id,
    blob_url: `${BLOB_PATH}${ticket.id}`,
    expires_at: iso(ticket.expiresAt),
    expires_in_s: Math.max(0, Math.floor((ticket.expiresAt - now) / 1000)),
    ...(ticket.kind === 'read'
      ? {}
      : { sha256_header: BLOB_SHA256_HEADER, sha256_at_end: BLOB_SHA256_AT_END_HEADER }),
  };
}

/** The write precondition the arguments ask for (the schema guarantees exactly one). */
export function conditionOf(args: WriteArgs): WriteCondition {
  if (args.lock_token !== undefined) {
    return args.if_match === undefined
      ? { lockToken: args.lock_token }
      : { ifMatch: args.if_match, lockToken: args.lock_token };
  }
  if (args.if_match !== undefined) return { ifMatch: args.if_match };
  return { ifNoneMatch: '*' };
}

const conditionName = (c: WriteCondition): 'create' | 'replace' | 'locked' =>
  'lockToken' in c ? 'locked' : 'ifMatch' in c ? 'replace' : 'create';

export class TransferService {
  readonly #deps: TransferDeps;

  constructor(deps: TransferDeps) {
    this.#deps = deps;
  }

  /** The wall alone: whether `mode` is allowed on the path now, and until when. */
  /**
   * Whether a grant allows `mode` on the path now. Touches nothing on Nextcloud, but is
   * audited as a check (the pipeline's intent and outcome, `check_only`): the CLI asks it
   * before it answers `unchanged` for a push it need not send, and that answer is a
   * statement about the grant.
   */
  checkAccess(
    ctx: CallContext,
    args: TransferArgs<'check_access'>,
  ): Promise<Outcome<TransferAnswer<'check_access'>>> {
    return this.#deps.pipeline.run(
      ctx,
      { op: args.mode, instance: args.instance, path: args.path },
      (_client, allowed) =>
        Promise.resolve({
          path: allowed.paths[0] ?? '',
          mode: args.mode,
          ...(allowed.expiresAt === undefined ? {} : { expires_at: iso(allowed.expiresAt) }),
        }),
      { intent: { check_only: true } },
    );
  }

  /**
   * The wall and the pipeline, then a ticket: no request to Nextcloud. The file's size
   * and etag come with its bytes (the blob GET's `x-broker-size` and `ETag`), and a
   * missing path or a folder is refused there, before any byte; so `size` and `etag`
   * are null here.
   */
  async read(ctx: CallContext, args: TransferArgs<'read'>): Promise<Outcome<FileTicket>> {
    const { pipeline, tickets } = this.#deps;
    const outcome = await pipeline.run(
      ctx,
      { op: 'read', instance: args.instance, path: args.path },
      (_client, allowed) =>
        Promise.resolve(
          tickets.issue({
            instance: allowed.instance,
            path: allowed.paths[0] ?? '',
            kind: 'read',
            grantIds: allowed.grantIds,
          }),
        ),
    );
    if (!outcome.ok) return outcome;
    const ticket = outcome.value;
    return {
      ...outcome,
      value: {
        path: ticket.path,
        size: null,
        etag: null,
        ticket: ticketView(ticket, this.#deps.now()),
      },
    };
  }

  async write(
    ctx: CallContext,
    args: WriteArgs,
  ): Promise<Outcome<{ path: string; size: number; ticket: TicketView }>> {
    const { pipeline, tickets } = this.#deps;
    const condition = conditionOf(args);
    const outcome = await pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? '';
        // Security: an early answer (the blob upload checks again) for a write that would
        // let Nextcloud's space-driven expiry delete the trash bin or old versions. It
        // only reads, as the stat does, so the two run side by side; a conflict the stat
        // finds is still the answer, and cuts the space read short.
        const cut = new AbortController();
        const spaceChecked = this.#deps.space
          .check(
            client,
            { ...allowed, signal: AbortSignal.any([allowed.signal, cut.signal]) },
            { kind: 'upload', path, bytes: args.size, replaces: !('ifNoneMatch' in condition) },
          )
          .then(
            () => undefined,
            (error: unknown) => ({ error }),
          );
        let current: Awaited<ReturnType<typeof client.stat>> | null;
        try {
          // Early answer for the common conflicts; Nextcloud enforces the same condition on the PUT.
          current = await statOrNull(() => client.stat(path, allowed.signal));
          refuseConflict(condition, current, path, `${allowed.instance}:${path}`);
        } catch (error) {
          cut.abort();
          await spaceChecked;
          throw error;
        }
        const space = await spaceChecked;
        if (space !== undefined) throw space.error;
        return tickets.issue({
          instance: allowed.instance,
          path,
          kind: 'write',
          grantIds: allowed.grantIds,
          issuedBy: ctx.correlationId,
          size: args.size,
          condition,
          ...(args.sha256 === undefined ? {} : { sha256: args.sha256 }),
          ...(current === null ? {} : { replaces: current }),
        });
      },
      {
        intent: { size: args.size, condition: conditionName(condition) },
        // It reads (a stat, the space) and issues a ticket; the blob PUT is the write.
        changesNothing: true,
      },
    );
    if (!outcome.ok) return outcome;
    const ticket = outcome.value;
    return {
      ...outcome,
      value: { path: ticket.path, size: args.size, ticket: ticketView(ticket, this.#deps.now()) },
    };
  }

  async checkout(ctx: CallContext, args: TransferArgs<'checkout'>): Promise<Outcome<Checkout>> {
    const { pipeline, tickets, checkouts, now } = this.#deps;
    const outcome = await pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? '';
        // Security: a LOCK on a missing path creates an empty file; lock only what exists.
        const entry = await client.stat(path, allowed.signal);
        if (entry.kind !== 'file') throw notAFile(path);
        const expiry = allowed.expiresAt;
        const grantLeft = expiry === undefined ? 0 : Math.floor((expiry - now()) / 1000);
        const seconds = Math.max(
          1,
          Math.min(args.timeout_s ?? MAX_LOCK_SECONDS, MAX_LOCK_SECONDS, grantLeft),
        );
        const { token, entry: locked, record } = await checkouts.take(client, allowed, seconds);
        const ticket = tickets.issue({
          instance: allowed.instance,
          path,
          kind: 'read',
          grantIds: allowed.grantIds,
        });
        return {
          entry: locked,
          token,
          seconds,
          lockExpiresAt: record.lockExpiresAt,
          lock: record.id,
          ticket,
        };
      },
      {
        describe: (v) => ({
          size: v.entry.size,
          etag: v.entry.etag,
          lock_seconds: v.seconds,
          // What undo needs: the lock, by its number in the broker's lock table.
          effect: { kind: 'locked', lock: v.lock },
        }),
      },
    );
    if (!outcome.ok) return outcome;
    const { entry, token, seconds, lockExpiresAt, ticket } = outcome.value;
    return {
      ...outcome,
      value: {
        path: ticket.path,
        lock_token: token,
        lock_expires_at: iso(lockExpiresAt),
        seconds,
        size: entry.size,
        etag: entry.etag,
        ticket: ticketView(ticket, now()),
      },
    };
  }

  async checkin(ctx: CallContext, args: TransferArgs<'checkin'>): Promise<Outcome<Checkin>> {
    const { pipeline, tickets, checkouts } = this.#deps;
    const warnings: string[] = [];
    const outcome = await pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? '';
        const known = checkouts.byToken(args.lock_token);
        // Security: a token the broker issued for another file is never used on this one.
        if (known !== undefined && (known.instance !== allowed.instance || known.path !== path)) {
          throw new OperationRefusal(
            refused(
              'lock_token_unknown',
              `this lock token belongs to another checkout, not "${path}"`,
              {
                hint: `check in each file with its own checkout's lock token (\`broker checkin ${allowed.instance}:${path}\` does so)`,
              },
            ),
          );
        }
        if (known === undefined) {
          warnings.push(
            'the broker has no record of this checkout (made by another broker?); Nextcloud checks the token',
          );
        }
        if (args.abandon === true) {
          // The UNLOCK gives the file a new etag: answer that one (see unlock.ts).
          const { outcome, etag } = await checkouts.releaseOwn(
            client,
            path,
            args.lock_token,
            'abandon',
          );
          if (outcome === 'not_held') {
            // Security: a token the broker never issued proves nothing by holding nothing.
            if (known === undefined)
              throw new OperationRefusal(
                refused('lock_token_unknown', `this lock token holds no lock on "${path}"`, {
                  hint: 'check in with the lock_token the checkout returned',
                }),
              );
            warnings.push(
              'the lock was already gone (it timed out, its grant ended, or the owner removed it)',
            );
          }
          return { kind: 'abandoned' as const, path, etag };
        }
        const entry = await client.stat(path, allowed.signal);
        if (entry.kind !== 'file') throw notAFile(path);
        // Security: as for a write: a checkin must not push the account into expiry.
        await this.#deps.space.check(client, allowed, {
          kind: 'upload',
          path,
          bytes: args.size ?? 0,
          replaces: true,
        });
        const ticket = tickets.issue({
          instance: allowed.instance,
          path,
          kind: 'checkin',
          grantIds: allowed.grantIds,
          issuedBy: ctx.correlationId,
          size: args.size ?? 0,
          condition: { lockToken: args.lock_token },
          lockToken: args.lock_token,
          ...(args.sha256 === undefined ? {} : { sha256: args.sha256 }),
          // Under the broker's lock: nobody else changes it before the upload.
          replaces: entry,
        });
        return { kind: 'ticket' as const, path, ticket };
      },
      {
        intent: {
          abandon: args.abandon === true,
          ...(args.size === undefined ? {} : { size: args.size }),
        },
      },
    );
    if (!outcome.ok) return outcome;
    const value = outcome.value;
    const all = [...warnings, ...outcome.warnings];
    if (value.kind === 'abandoned') return { ok: true, value, warnings: all };
    return {
      ok: true,
      value: {
        kind: 'ticket',
        path: value.path,
        size: args.size ?? 0,
        ticket: ticketView(value.ticket, this.#deps.now()),
      },
      warnings: all,
    };
  }
}
