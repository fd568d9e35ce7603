/**
 * What the owner declares of the Nextcloud server's retention settings
 * (`instances.<name>.retention` in config.yaml): the values of
 * `trashbin_retention_obligation` and `versions_retention_obligation` in the server's
 * config.php, which no API shows. The broker reads nothing from them but one question:
 * can Nextcloud's space-driven expiry delete young trash bin items or versions
 * (docs/nextcloud-behaviour.md#space-driven-expiry)? It writes into a folder another user
 * shared only when that user has no quota, or when this declaration says it cannot.
 *
 * Read in files_trashbin's and files_versions' `Expiration` (34.0.1): a value is `auto`,
 * `disabled`, `D`, or two of `D`/`auto` separated by a comma (`D` days, a whole number).
 * The trash bin keeps young items from space-driven expiry with `disabled`, or with a
 * first number of at least 1 and no `auto` (`30`, `30, 60`: only items older than the
 * first number go for space). Versions are kept from it only with `disabled`: under any
 * other value `Storage::expire` deletes the oldest versions while versions are over
 * their share, whatever their age.
 */
import { z } from 'zod';

const PART = '(?:auto|\\d{1,5})';
const OBLIGATION = new RegExp(`^\\s*(?:disabled|${PART}(?:\\s*,\\s*${PART})?)\\s*$`);

const obligation = (key: string) =>
  z
    .string({ error: `must be the text of ${key} in the server's config.php, e.g. "30, 60"` })
    .regex(OBLIGATION, {
      error: `must be a value Nextcloud takes for ${key}: auto, disabled, D, or "D1, D2" (whole days, or auto)`,
    });

export const RetentionSchema = z.strictObject(
  {
    trashbin_retention_obligation: obligation('trashbin_retention_obligation'),
    versions_retention_obligation: obligation('versions_retention_obligation'),
  },
  {
    error: (issue) =>
      issue.code === 'invalid_type'
        ? 'must be a mapping of the two settings (trashbin_retention_obligation, versions_retention_obligation)'
        : undefined,
  },
);

export type Retention = z.infer<typeof RetentionSchema>;

/** Whether this trash bin setting keeps items younger than a day from space-driven expiry. */
export function trashKeepsYoung(value: string): boolean {
  const parts = value.split(',').map((p) => p.trim());
  if (parts[0] === 'disabled') return true;
  // `auto` anywhere lets Nextcloud purge for space (`canPurgeToSaveSpace`).
  if (parts.some((p) => p === 'auto')) return false;
  return Number(parts[0]) >= 1;
}

/** Whether this versions setting keeps every version from space-driven expiry. */
export function versionsKept(value: string): boolean {
  return value.trim() === 'disabled';
}

/**
 * Whether the declaration says that no space-driven expiry can delete young trash bin
 * items or any version: both settings must say so.
 */
export function keepsFromSpaceExpiry(retention: Retention | undefined): boolean {
  return (
    retention !== undefined &&
    trashKeepsYoung(retention.trashbin_retention_obligation) &&
    versionsKept(retention.versions_retention_obligation)
  );
}
