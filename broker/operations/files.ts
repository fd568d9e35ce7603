/**
 * The agent surface's Nextcloud verbs, each one `Pipeline.run` with its wall op. Each
 * answers the canonical paths it acted on, for the tool to word; only the steps below
 * ever hold a Nextcloud client.
 */
import type { CallContext } from '../base/call.js';
import { refused } from '../base/envelope.js';
import { searchTerm } from '../base/search-term.js';
import { GrantEndedError } from './in-flight.js';
import { envelopeForNextcloudError, isNotFolder } from './nextcloud-errors.js';
import { OperationRefusal, type Outcome, type Pipeline } from './pipeline.js';
import type { SpaceGuard } from './space-guard.js';
import type { Reservation } from './space-ledger.js';
import { cutRefusal } from './wall-answers.js';
import type { TrashRecord } from '../audit/changes.js';
import type { Entry, TrashOutcome } from '../nextcloud/client.js';

export const LIST_PAGE_SIZE = 200;
/** Results per search page: also the most one call answers. */
export const SEARCH_PAGE_SIZE = 100;

export interface Listing {
  /** The canonical folder path ('' = the root, discovery only). */
  path: string;
  /** Listed under the instance's discovery policy, not a grant: names only. */
  discovery: boolean;
  entries: Entry[];
  next?: string;
}

export interface SearchResults {
  /** The canonical folder searched under ('' = the whole account, discovery only). */
  path: string;
  /** The canonical (NFC) term that was matched. */
  query: string;
  /** Searched under the instance's discovery policy, not a grant: names only. */
  discovery: boolean;
  entries: Entry[];
  next?: string;
  /** Results the server sent from outside the folder: dropped, counted in the audit. */
  outside: number;
}

/**
 * What a trash did, as its audit outcome records it (docs/contracts.md §4): undo restores
 * `name` from the trash bin to `renamed` and moves it back to `original`.
 */
export function trashRecord(outcome: TrashOutcome): TrashRecord {
  const { state, original, renamed } = outcome;
  return outcome.state === 'trashed'
    ? {
        state,
        original,
        renamed,
        name: outcome.name,
        deleted_at: outcome.deletedAt,
        file_id: outcome.fileId,
      }
    : { state, original, renamed };
}

/** Where the item is when the delete did not happen, in words for the agent. */
const NOT_TRASHED: Record<
  Exclude<TrashOutcome['state'], 'trashed'>,
  (o: TrashOutcome) => string
> = {
  renamed_back: (o) => `nothing was trashed: "${o.original}" is where it was`,
  left_renamed: (o) =>
    `nothing was trashed, and the broker could not give the item its name back: it is now "${o.renamed}" in the same folder; ask the owner to rename it back`,
  unconfirmed: (o) =>
    `Nextcloud did not confirm the delete: the item is either "${o.renamed}" (same folder) or in the trash bin under that name; nothing is lost; check with list, or ask the owner`,
};

export class FileOperations {
  readonly #pipeline: Pipeline;
  readonly #space: SpaceGuard;

  constructor(pipeline: Pipeline, space: SpaceGuard) {
    this.#pipeline = pipeline;
    this.#space = space;
  }

  list(
    ctx: CallContext,
    args: { instance: string; path: string; cursor?: string },
  ): Promise<Outcome<Listing>> {
    return this.#pipeline.run(
      ctx,
      { op: 'list', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? '';
        const page = await client
          .list(path, args.cursor, LIST_PAGE_SIZE, allowed.signal)
          .catch((error: unknown) => {
            if (!isNotFolder(error)) throw error;
            // The agent surface has no read tool: name what the agent does have.
            throw new OperationRefusal(
              refused(
                'not_a_folder',
                `"${path}" is a file, not a folder, so it cannot be listed; nothing here returns file content`,
                { hint: `to get its content, run \`broker fetch ${allowed.instance}:${path}\`` },
              ),
            );
          });
        const listing: Listing = { path, discovery: allowed.discovery, entries: page.entries };
        return page.next === undefined ? listing : { ...listing, next: page.next };
      },
      { describe: (v) => ({ entries: v.entries.length, more: v.next !== undefined }) },
    );
  }

  async search(
    ctx: CallContext,
    args: { instance: string; path: string; query: string; cursor?: string },
  ): Promise<Outcome<SearchResults>> {
    const term = searchTerm(args.query);
    if (!term.ok) {
      const envelope = await this.#pipeline.refuse(
        ctx,
        'invalid_arguments',
        term.reason,
        { instance: args.instance, op: 'search', path: args.path, query: args.query },
        'send part of a file or folder name, e.g. "report"; the query is matched literally',
      );
      return { ok: false, envelope };
    }
    const query = term.term;
    return this.#pipeline.run(
      ctx,
      { op: 'search', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = allowed.paths[0] ?? '';
        const page = await client.search(
          path,
          query,
          args.cursor,
          SEARCH_PAGE_SIZE,
          allowed.signal,
        );
        const results: SearchResults = {
          path,
          query,
          discovery: allowed.discovery,
          entries: page.entries,
          outside: page.outside,
        };
        return page.next === undefined ? results : { ...results, next: page.next };
      },
      {
        intent: { query },
        // Security: what the server sent from outside the folder was dropped; the
        // outcome line records how many (the log names them).
        describe: (v) => ({
          results: v.entries.length,
          more: v.next !== undefined,
          dropped_outside: v.outside,
        }),
      },
    );
  }

  mkdir(
    ctx: CallContext,
    args: { instance: string; path: string },
  ): Promise<Outcome<{ path: string; fileId: string | null }>> {
    return this.#pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        const path = first(allowed.paths);
        const { fileId } = await client.mkdir(path, allowed.signal);
        return { path, fileId };
      },
      // What undo needs: the folder it made (undo trashes it while it is empty).
      { describe: (v) => ({ effect: { kind: 'created', what: 'folder', file_id: v.fileId } }) },
    );
  }

  move(
    ctx: CallContext,
    args: { instance: string; from: string; to: string },
  ): Promise<Outcome<{ from: string; to: string; fileId: string | null }>> {
    return this.#pipeline.run(
      ctx,
      { op: 'move', instance: args.instance, from: args.from, to: args.to },
      async (client, allowed) => {
        const [from, to] = allowed.paths;
        if (from === undefined || to === undefined)
          throw new Error('move decided without two paths');
        // Security: a move into another user's space (a folder shared with this account,
        // or back out of one) carries the item's bytes there, as an upload would: judged
        // and held like one (space-guard.ts), inside the move's namespace step.
        let held: Reservation | undefined;
        try {
          const { fileId } = await client.move(from, to, allowed.signal, async () => {
            held = await this.#space.reserveMove(client, allowed, { from, to });
          });
          return { from, to, fileId };
        } finally {
          held?.settle();
        }
      },
      // What undo needs: which item moved (undo moves it back while it is still there).
      { describe: (v) => ({ effect: { kind: 'moved', file_id: v.fileId } }) },
    );
  }

  trash(
    ctx: CallContext,
    args: { instance: string; path: string },
  ): Promise<Outcome<{ path: string; trash: TrashRecord }>> {
    return this.#pipeline.run(
      ctx,
      { op: 'write', instance: args.instance, path: args.path },
      async (client, allowed) => {
        // Security: a DELETE without the trash bin is permanent; only trash what can be
        // restored. (The client also refuses what a DELETE would unshare: mounts.ts.)
        const caps = await client.capabilities(allowed.signal);
        if (!caps.undelete) {
          throw new OperationRefusal(
            refused(
              'trash_unavailable',
              'the trash bin is disabled on this instance, so deleting would be permanent; nothing was deleted',
              { hint: 'ask the owner to enable the trash bin, or move the item elsewhere instead' },
            ),
          );
        }
        const path = first(allowed.paths);
        // Security: a trash that fills the trash bin past Nextcloud's limit makes its
        // expiry job delete the oldest trash items (the owner's): refused first, and its
        // bytes held against the writes beside it until it is done.
        const reservation = await this.#space.reserve(client, allowed, { kind: 'trash', path });
        let outcome: TrashOutcome;
        try {
          // Security: under a unique name, so no later delete of the same name (the
          // agent's next trash, the owner's own) can overwrite its trash bin entry.
          outcome = await client.trash(path, allowed.signal);
        } finally {
          reservation.settle();
        }
        const trash = trashRecord(outcome);
        if (outcome.state === 'trashed') return { path, trash };
        // A grant that ended under the trash is the cause to name (as for any operation).
        const end: unknown = allowed.signal.aborted ? allowed.signal.reason : undefined;
        const envelope =
          end instanceof GrantEndedError
            ? cutRefusal(end.grantIds, end.end)
            : envelopeForNextcloudError(outcome.cause, (text) => text);
        throw new OperationRefusal(
          { ...envelope, message: `${envelope.message}; ${NOT_TRASHED[outcome.state](outcome)}` },
          end instanceof GrantEndedError ? end.end.state : undefined,
          { trash },
        );
      },
      { describe: (v) => ({ trash: v.trash }) },
    );
  }
}

function first(paths: readonly string[]): string {
  const path = paths[0];
  // Security: a step never runs without the wall's canonical path.
  if (path === undefined || path === '') throw new Error('write step without a canonical path');
  return path;
}
