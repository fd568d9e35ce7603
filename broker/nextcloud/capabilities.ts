/**
 * Parses `GET /ocs/v2.php/cloud/capabilities?format=json` into the two facts the broker
 * acts on: whether deletes go to the trash bin, and whether token locks are available.
 */
import { z } from 'zod';
import { NextcloudError } from './errors.js';

export interface Capabilities {
  /** files_trashbin is on: a DELETE can be undone. */
  undelete: boolean;
  /** files_lock is on: LOCK/UNLOCK work. */
  locking: boolean;
}

// Not `.strict()`: this is Nextcloud's document with hundreds of keys we do not use;
// unknown keys are stripped and only the fields below are trusted.
// The two fields stay `unknown`: an odd type reads as "off", never as a broken document.
const FilesSchema = z.object({
  undelete: z.unknown().optional(),
  locking: z.unknown().optional(),
});
const OcsSchema = z.object({
  ocs: z.object({
    data: z.object({
      capabilities: z.object({ files: FilesSchema.optional() }),
    }),
  }),
});

export function parseCapabilities(json: string): Capabilities {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    doc = undefined;
  }
  const parsed = OcsSchema.safeParse(doc);
  if (!parsed.success)
    throw new NextcloudError(
      'bad_response',
      'Nextcloud sent capabilities the broker cannot read: not retried; report this to the owner',
    );
  const files = parsed.data.ocs.data.capabilities.files;
  return {
    // Security: only an explicit `true` counts; anything else means a DELETE could be
    // permanent, so trash is refused.
    undelete: files?.undelete === true,
    locking: typeof files?.locking === 'string' && files.locking !== '',
  };
}
