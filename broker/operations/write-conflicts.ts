/**
 * The early answer of a `write` ticket to the common conflicts, from a stat of the
 * target: a file where a create was asked, a version other than the one fetched, a file
 * gone, a folder. Nextcloud enforces the same condition on the upload itself; this only
 * spares the client sending a body that could never be written.
 */
import { refused } from '../base/envelope.js';
import type { Entry, WriteCondition } from '../nextcloud/client.js';
import { isNotFound } from './nextcloud-errors.js';
import { OperationRefusal } from './pipeline.js';

/** The refusal for a folder where a file is needed (read, write, checkout, the blob GET). */
export function notAFile(path: string): OperationRefusal {
  return new OperationRefusal(
    refused('not_a_file', `"${path}" is a folder, not a file; only files can be transferred`),
  );
}

/** The stat's answer, or null when nothing is at the path. */
export async function statOrNull<T>(stat: () => Promise<T>): Promise<T | null> {
  try {
    return await stat();
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * Throws the refusal `condition` meets at `path` given what is there now (`current`,
 * null: nothing); `target` is how the hint names the file (`instance:path`).
 */
export function refuseConflict(
  condition: WriteCondition,
  current: Pick<Entry, 'kind' | 'etag'> | null,
  path: string,
  target: string,
): void {
  if (current !== null && current.kind !== 'file') throw notAFile(path);
  if ('ifNoneMatch' in condition && current !== null) {
    throw new OperationRefusal(
      refused('conflict', `"${path}" already exists; nothing was written`, {
        hint: `push to another name, or \`broker fetch ${target}\` first and push your change to the fetched copy (a fetched file is replaced only if unchanged since)`,
        etag: current.etag,
      }),
    );
  }
  if (
    'ifMatch' in condition &&
    (current === null || (current.etag !== null && current.etag !== condition.ifMatch))
  ) {
    throw new OperationRefusal(
      refused(
        'conflict',
        current === null
          ? `"${path}" no longer exists on Nextcloud (moved or trashed since it was fetched), so it cannot be replaced; nothing was written`
          : `"${path}" changed since it was fetched (etag differs); nothing was written`,
        {
          hint:
            current === null
              ? `check with list where it went; to create it anew, \`broker push\` it to a new name`
              : `\`broker fetch ${target}\` the current version to a new local path (your copy stays), reapply your change there and \`broker push\` that`,
          ...(current === null ? {} : { etag: current.etag }),
        },
      ),
    );
  }
}
