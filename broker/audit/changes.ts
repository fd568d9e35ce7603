/**
 * What an operation changed on Nextcloud, and what undo did about it: the vocabulary of
 * an operation's `outcome` fields `trash` and `effect` (the verbs write them, undo reads
 * them) and of the `undo` event's `action`, `result` and `now` (events.ts declares the
 * events; docs/contracts.md §4 describes the fields).
 */
import { z } from 'zod';

const CountSchema = z.number().int().nonnegative();

/**
 * What a trash did, for undo and the owner (docs/contracts.md §4): where the item was,
 * the unique name it was deleted under, and its trash bin entry; or, when the delete did
 * not happen, where the item is.
 */
export const TrashRecordSchema = z.strictObject({
  state: z.enum(['trashed', 'renamed_back', 'left_renamed', 'unconfirmed']),
  original: z.string(),
  renamed: z.string(),
  name: z.string().nullable().optional(),
  deleted_at: z.number().int().nullable().optional(),
  /** (`trashed` only) the file id the trash bin lists for the entry; `null` with `name`. */
  file_id: z.string().nullable().optional(),
});

/**
 * What an operation changed on Nextcloud, as undo needs it to take it back
 * (docs/contracts.md §4, "What undo reads"), beside the line's own `path` (or `from` and
 * `to`), `sha256` and `size`: a file whose content was replaced (its id, and the
 * replaced content's mtime, size and ETag: Nextcloud keeps it as the version named by
 * that mtime), a new file or folder, a move, a new calendar event, a checkout's lock.
 * A trash says what it did in `trash` (TrashRecordSchema). Ids are Nextcloud's strings;
 * null where Nextcloud's answer did not name one.
 */
export const EffectRecordSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('replaced'),
    file_id: z.string().nullable(),
    replaced: z.strictObject({
      /** Unix seconds: the name of the version Nextcloud keeps it under. */
      mtime: z.number().int().nullable(),
      size: CountSchema.nullable(),
      etag: z.string().nullable(),
    }),
  }),
  z.strictObject({
    kind: z.literal('created'),
    what: z.enum(['file', 'folder']),
    file_id: z.string().nullable(),
  }),
  z.strictObject({ kind: z.literal('moved'), file_id: z.string().nullable() }),
  /** A calendar event: its calendar, object name and ETag when it was created. */
  z.strictObject({
    kind: z.literal('event'),
    calendar: z.string(),
    object: z.string(),
    etag: z.string().nullable(),
  }),
  /** A checkout's lock: its number in the broker's lock table. */
  z.strictObject({ kind: z.literal('locked'), lock: z.number().int().positive() }),
]);

/** What undo does to take an operation back (the `action` of its lines). */
export const UNDO_ACTIONS = [
  'restore_version',
  'trash',
  'move_back',
  'restore_trash',
  'trash_event',
  'release_lock',
  'none',
] as const;

/** How undo left an operation (the `result` of its outcome line). */
export const UNDO_RESULTS = [
  /** Taken back. */
  'undone',
  /** Nothing left to take back: an earlier undo did, or the lock is gone. */
  'already',
  /** The operation changed nothing (a read, a refusal). */
  'nothing',
  /** A dry run: it would be taken back. */
  'would_undo',
  /** Left as it is: what is there changed since (`now`). */
  'changed_since',
  /** Left as it is: the record does not say enough (`reason`). */
  'not_undoable',
  /** Left as it is: Nextcloud failed (`code`, `reason`). */
  'failed',
] as const;

/** What undo found where the operation acted, when it left it as it is. */
export const UndoNowSchema = z.strictObject({
  path: z.string().optional(),
  exists: z.boolean(),
  kind: z.enum(['file', 'folder']).optional(),
  file_id: z.string().nullable().optional(),
  size: CountSchema.nullable().optional(),
  etag: z.string().nullable().optional(),
  /** Unix seconds. */
  mtime: z.number().int().nullable().optional(),
  /** A folder's entries, or the versions Nextcloud lists. */
  entries: CountSchema.optional(),
});

/** What an `undo` line says beside what every line of it carries (events.ts). */
export const UndoFields = {
  instance: z.string(),
  /** The operation's tool, and what undo does to it. */
  tool: z.string(),
  action: z.enum(UNDO_ACTIONS),
  path: z.string().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  /** Part of `undo --request N`. */
  request: z.number().int().positive().optional(),
  dry_run: z.literal(true).optional(),
  result: z.enum(UNDO_RESULTS).optional(),
  reason: z.string().optional(),
  code: z.string().optional(),
  now: UndoNowSchema.optional(),
  /** The version put back (its name), the trash bin entry restored, what undo trashed. */
  version: z.string().optional(),
  restored: z.string().optional(),
  trash: TrashRecordSchema.optional(),
  calendar_trash: z.string().nullable().optional(),
};

/** A trash's record on its outcome line (operations/files.ts writes it, undo reads it). */
export type TrashRecord = z.infer<typeof TrashRecordSchema>;
/** What an operation changed, on its outcome line (the verbs write it, undo reads it). */
export type EffectRecord = z.infer<typeof EffectRecordSchema>;
export type UndoAction = (typeof UNDO_ACTIONS)[number];
export type UndoResult = (typeof UNDO_RESULTS)[number];
export type UndoNow = z.infer<typeof UndoNowSchema>;
