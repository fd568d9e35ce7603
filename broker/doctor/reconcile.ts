/**
 * Whether reconciliation can see what the broker's account does (docs/user-guide.md
 * "Reconciliation"): the Activity app answers (without it reconciliation is off, and the
 * doctor says why), reconcile.interval, and whether the account's stream shows the
 * broker's own last change. On Nextcloud 29 and 34 a user's own Activity settings do not
 * hide their own changes from the stream (docs/nextcloud-behaviour.md); what else could
 * (rows expired, a server's app or patch) shows here as the broker's last change missing.
 */
import { join } from 'node:path';
import { LOG_FILE } from '../audit/log.js';
import { readRecords } from '../audit/records.js';
import { formatDuration } from '../config/duration.js';
import type { BrokerConfig, InstanceConfig } from '../config.js';
import { iso } from '../base/time.js';
import { readActivity } from '../nextcloud/activity.js';
import { readActivityRows } from '../nextcloud/activity-rows.js';
import type { NextcloudConnection } from '../nextcloud/connection.js';
import { NextcloudError } from '../nextcloud/errors.js';
import { AuditFactsBuilder, type AuditedOperation } from '../operations/reconcile/audited.js';
import { changeOf } from '../operations/reconcile/changes.js';
import { canExplain, TOOL_CHANGES } from '../operations/reconcile/match.js';
import { accountsOf } from '../operations/reconcile/report.js';
import { type Check, pass, skip, warn } from './checklist.js';

/** Pages of the stream read back looking for the broker's last change. */
const MAX_PAGES = 5;
const TOLERANCE_MS = 5_000;

/** The newest operation of the account that surely changed something (Nextcloud answered it). */
async function lastChange(
  config: Pick<BrokerConfig, 'data_dir' | 'instances'>,
  instances: readonly string[],
): Promise<AuditedOperation | undefined> {
  const facts = new AuditFactsBuilder(Number.POSITIVE_INFINITY);
  await readRecords(join(config.data_dir, LOG_FILE), 0, (r, at) => facts.add(r, at));
  return facts
    .facts()
    .operations.filter(
      (op) =>
        instances.includes(op.instance) &&
        TOOL_CHANGES.has(op.tool) &&
        op.end !== undefined &&
        (op.fileIds.size > 0 || op.uid !== undefined),
    )
    .at(-1);
}

async function ownChangesShown(
  conn: NextcloudConnection,
  config: Pick<BrokerConfig, 'data_dir' | 'instances'>,
  inst: InstanceConfig,
): Promise<Check> {
  const account = accountsOf(config.instances.values()).find((a) =>
    a.instances.includes(inst.name),
  );
  const op = await lastChange(config, account?.instances ?? [inst.name]);
  if (op === undefined)
    return skip(
      'whether the Activity stream shows the broker’s own changes: not checked yet (the broker has changed nothing with this account)',
    );
  const what = `${op.tool} on ${op.paths.join(' → ') || 'a calendar'} at ${iso(op.start)}`;
  const now = Date.now();
  let since: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const read = await readActivityRows(
      { conn },
      { sort: 'desc', ...(since === undefined ? {} : { since }) },
    );
    if (read.rows.some((r) => canExplain(op, changeOf(r), { toleranceMs: TOLERANCE_MS, now })))
      return pass(`the Activity stream shows the broker’s own changes (its last: ${what})`);
    const older = read.rows.some((r) => r.time < op.start - TOLERANCE_MS - 60_000);
    if (older || read.next === undefined) break;
    since = read.lastRead;
  }
  return warn(
    `the Activity stream of ${inst.username} does not show the broker’s last change (${what}): something hides the account’s own changes (rows expired, a server setting or app), so reconciliation cannot see a change made with its app password either`,
    "look at the account's Activity in Nextcloud's web UI; ask the admin what removes its rows (activity_expire_days, apps that change the Activity app)",
  );
}

export async function checkReconcile(
  inst: InstanceConfig,
  conn: NextcloudConnection,
  config: Pick<BrokerConfig, 'data_dir' | 'instances' | 'reconcile'>,
): Promise<Check[]> {
  try {
    await readActivity({ conn }, { filter: 'self', sort: 'desc', limit: 1 });
  } catch (error) {
    if (error instanceof NextcloudError && error.code === 'not_found')
      return [
        warn(
          `reconciliation is off for "${inst.name}": this Nextcloud has no Activity app, so it keeps no record of what ${inst.username} did to compare with the audit log (the broker works on without it)`,
          'ask the admin to enable the Activity app (`occ app:enable activity`)',
        ),
      ];
    const detail = error instanceof NextcloudError ? error.code : 'unknown error';
    return [
      warn(
        `the Activity app could not be read (${detail}): reconciliation cannot run now`,
        "check the server's logs and run doctor again",
      ),
    ];
  }
  const { interval } = config.reconcile;
  const checks: Check[] = [
    pass('the Activity app answers: reconciliation can compare its record with the audit log'),
    interval === 'off'
      ? warn(
          'reconcile.interval is off: the broker does not compare by itself',
          'set reconcile.interval (default 10m), or run `broker reconcile` yourself',
        )
      : pass(`the broker compares every ${formatDuration(interval)} (reconcile.interval)`),
  ];
  try {
    checks.push(await ownChangesShown(conn, config, inst));
  } catch (error) {
    const detail = error instanceof NextcloudError ? error.code : 'unknown error';
    checks.push(
      warn(
        `whether the Activity stream shows the broker’s own changes could not be read (${detail})`,
        'run doctor again',
      ),
    );
  }
  return checks;
}
