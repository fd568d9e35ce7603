/**
 * What an operation changed on Nextcloud, as its outcome line records it for undo
 * (`effect`, docs/contracts.md §4): built here from what the step saw and what Nextcloud
 * answered, so every verb words it the same way.
 */
import type { EffectRecord } from '../audit/changes.js';
import type { Entry } from '../nextcloud/client.js';

/** An upload's effect: over `replaced` (the file as its ticket read it), or a new file. */
export function uploadEffect(replaced: Entry | undefined, fileId: string | null): EffectRecord {
  if (replaced === undefined) return { kind: 'created', what: 'file', file_id: fileId };
  const ms = replaced.modified === null ? NaN : Date.parse(replaced.modified);
  return {
    kind: 'replaced',
    // The id does not change with its content; the ticket's read names it, else the answer.
    file_id: replaced.fileId ?? fileId,
    replaced: {
      mtime: Number.isFinite(ms) ? Math.floor(ms / 1000) : null,
      size: replaced.size,
      etag: replaced.etag,
    },
  };
}
