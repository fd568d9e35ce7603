/**
 * The broker's own account (docs/user-guide.md "A dedicated account"): what a leak of its
 * app password would reach. Fails an administrator (a leak reaches every account and the
 * server's settings); warns when the account owns what it reaches (then it is someone's
 * own account: Nextcloud's records name the account, so that person's changes cannot be
 * told from the broker's, and a leak reaches all they have); lists the top-level entries
 * it reaches, with their owner and what the share allows. The Flow rule that limits the
 * app password to the broker's host is the admin's and cannot be read with it: the doctor
 * names it, not checks it.
 */
import type { InstanceConfig } from '../config.js';
import { readAccount } from '../nextcloud/account.js';
import type { NextcloudConnection } from '../nextcloud/connection.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { inspectRoot, type Inspection } from '../nextcloud/inspect.js';
import { type Check, fail, pass, skip, warn } from './checklist.js';

/** Entries listed one per line; the rest are counted. */
const LISTED = 20;
const DEDICATED =
  'make an account for the broker alone and share with it only what the agent needs (docs/user-guide.md, "A dedicated account")';

/**
 * What a share's permission letters allow, in words (docs/nextcloud-behaviour.md). D, N
 * and V on a received share's root are the account's rights on its mount point (a
 * read-only share shows them too), said so lest they read as rights on the files.
 */
function allows(permissions: string | null): string {
  if (permissions === null) return 'permissions not answered';
  const words = [
    ...(permissions.includes('G') ? ['read'] : []),
    ...(/[WCK]/.test(permissions) ? ['write'] : []),
    ...(permissions.includes('R') ? ['reshare'] : []),
  ];
  const mountPoint = /[DNV]/.test(permissions)
    ? '; D, N, V: it may remove, rename or move the share in its own view'
    : '';
  return `${words.length === 0 ? 'nothing' : words.join(', ')} (${permissions}${mountPoint})`;
}

function entryLine(item: Inspection, user: string): Check {
  const name = `${item.entry.name}${item.entry.kind === 'folder' ? '/' : ''}`;
  const owner = item.mount.owner ?? '?';
  if (item.mount.root === true && item.mount.type !== '')
    return pass(`reaches ${name}: ${item.mount.type} by ${owner}, may ${allows(item.permissions)}`);
  return pass(`reaches ${name}: its own${owner === user ? '' : ` (owner ${owner})`}`);
}

async function checkAdmin(inst: InstanceConfig, conn: NextcloudConnection): Promise<Check> {
  const account = await readAccount({ conn });
  if (account.groups.includes('admin'))
    return fail(
      `${inst.username} is a Nextcloud administrator: a leak of its app password reaches every account, share and setting of the server`,
      DEDICATED,
    );
  if (account.subadmin.length > 0)
    return fail(
      `${inst.username} administers the users of ${account.subadmin.join(', ')}: a leak of its app password can change their accounts`,
      DEDICATED,
    );
  return pass(`${inst.username} is not an administrator`);
}

async function checkReach(inst: InstanceConfig, conn: NextcloudConnection): Promise<Check[]> {
  const items = await inspectRoot(conn);
  const own = items.filter((i) => !(i.mount.root === true && i.mount.type !== ''));
  const lines = items.slice(0, LISTED).map((i) => entryLine(i, inst.username));
  if (items.length > LISTED) lines.push(pass(`… and ${items.length - LISTED} more entries`));
  if (items.length === 0)
    lines.push(
      warn(
        `${inst.username} reaches nothing yet`,
        'share the folders the agent may ask for with it (Files → Share), then run doctor again',
      ),
    );
  if (own.length > 0)
    lines.unshift(
      warn(
        `${inst.username} owns ${own.length} of the ${items.length} top-level entries it reaches (${own
          .slice(0, 3)
          .map((i) => i.entry.name)
          .join(
            ', ',
          )}${own.length > 3 ? ', …' : ''}): it is someone's own account. Nextcloud's records name the account, so that person's changes cannot be told from the broker's (reconciliation reports them as unexplained, or a leak hides among them), and a leaked app password reaches everything the account has`,
        DEDICATED,
      ),
    );
  return lines;
}

/** The account checks of one instance, on the doctor's connection. */
export async function checkAccount(
  inst: InstanceConfig,
  conn: NextcloudConnection,
): Promise<Check[]> {
  const checks: Check[] = [];
  try {
    checks.push(await checkAdmin(inst, conn));
    checks.push(...(await checkReach(inst, conn)));
  } catch (error) {
    const detail = error instanceof NextcloudError ? error.code : 'unknown error';
    checks.push(
      fail(
        "the account's groups and what it reaches could not be read",
        "check the server's logs and run doctor again",
        detail,
      ),
    );
  }
  checks.push(
    skip(
      'the app password from other hosts: not checked (a Flow rule on the request address, files_accesscontrol, is the admin’s to set and cannot be read with it; see docs/runbook.md, "Limit the app password to the broker’s host")',
    ),
  );
  return checks;
}
