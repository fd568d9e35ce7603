/**
 * Whether `broker undo` can work for an instance, and why not (docs/contracts.md §6):
 * undo restores a replaced file from the version Nextcloud kept (files_versions) and
 * puts what it removes, or takes back from, the trash bin (files_trashbin). It reads the
 * capabilities the doctor already fetched, and what the instance's config declares of
 * the server's retention (versions and trash items Nextcloud expires cannot come back).
 */
import type { InstanceConfig } from '../config.js';
import type { Capabilities } from '../nextcloud/capabilities.js';
import { type Check, pass, warn } from './checklist.js';

const AUTO_EXPIRY =
  "under Nextcloud's default retention ('auto') versions are thinned out as they age (one a day after a day, one a week after a month) and trash bin items go after 30 days or for space: undo works best soon after the agent's session";

export function checkUndo(inst: InstanceConfig, caps: Capabilities): Check {
  const missing = [
    ...(caps.versioning
      ? []
      : [
          'the Versions app is off (capability files.versioning missing): Nextcloud keeps no version of what an upload replaces, so undo cannot put back a file the agent overwrote',
        ]),
    ...(caps.undelete
      ? []
      : [
          'the trash bin is off: undo cannot move what the agent created to the trash bin, nor restore what it trashed',
        ]),
  ];
  if (missing.length > 0)
    return warn(
      `undo cannot work fully on ${inst.name}: ${missing.join('; ')}`,
      `enable ${[...(caps.versioning ? [] : ['files_versions']), ...(caps.undelete ? [] : ['files_trashbin'])].join(' and ')} (Apps, or \`occ app:enable …\`); what is done meanwhile cannot be undone`,
    );
  const versions = inst.retention?.versions_retention_obligation;
  return pass(
    `undo can work: versions and the trash bin are on (a replaced file comes back from its version, what the agent made goes to the trash bin); ${
      versions === undefined || versions.includes('auto')
        ? AUTO_EXPIRY
        : `versions_retention_obligation '${versions}' is declared: versions Nextcloud deletes by it cannot be restored`
    }`,
  );
}
