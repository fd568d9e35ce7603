/**
 * What a reconciliation answers (docs/contracts.md "broker reconcile"): per Nextcloud
 * account, what was read and what the broker did not do. The same object is the owner
 * socket's answer, `broker reconcile --json`'s output and what the owner is told; the
 * `reconcile` audit event records its counts and its first unexplained changes.
 *
 * An account is one Nextcloud user on one server: two instances configured with the
 * same account share one Activity stream, and each one's operations explain its changes.
 */
import { iso } from '../../base/time.js';
import { shownPath, type Change } from './changes.js';

export interface ReconcileAccount {
  /** `user@url`: the cursor's key. */
  readonly key: string;
  /** The first of its instances (the report's name, the metric's label). */
  readonly name: string;
  readonly instances: readonly string[];
  readonly user: string;
}

/** The accounts of the configured instances, in configuration order. */
export function accountsOf(
  instances: Iterable<{ readonly name: string; readonly url: string; readonly username: string }>,
): ReconcileAccount[] {
  const byKey = new Map<string, { name: string; instances: string[]; user: string }>();
  for (const i of instances) {
    const key = `${i.username}@${i.url.replace(/\/+$/, '')}`;
    const known = byKey.get(key);
    if (known === undefined)
      byKey.set(key, { name: i.name, instances: [i.name], user: i.username });
    else known.instances.push(i.name);
  }
  return [...byKey].map(([key, a]) => ({ key, ...a }));
}

export interface UnexplainedChange {
  readonly activity_id: string;
  readonly time: string;
  /** Nextcloud's `type` (`file_changed`, `file_deleted`, `calendar_event`, …). */
  readonly type: string;
  /** Where (a move: where it went; an event: `event UID`). */
  readonly path: string;
  /** A rename or move: the path before it. */
  readonly old_path?: string;
}

/**
 * `ok`: compared; `started`: the first run set the cursor (later changes are compared);
 * `off`: the server has no Activity app, nothing can be compared; `unreachable`: Nextcloud
 * did not answer (`problem` says how).
 */
export type ReconcileStatus = 'ok' | 'started' | 'off' | 'unreachable';

export interface ReconcileReport {
  readonly instance: string;
  readonly instances: readonly string[];
  readonly user: string;
  readonly status: ReconcileStatus;
  /** Where the comparison started (the cursor's time, or --since); null when none. */
  readonly from: string | null;
  /** The account's own changes read. */
  readonly rows: number;
  readonly explained: number;
  readonly unexplained: readonly UnexplainedChange[];
  /** For `off` and `unreachable`: the cause and the next step. */
  readonly problem?: string;
}

/** An Activity type as Nextcloud's apps name them (`file_changed`, `calendar_event`). */
const ACTIVITY_TYPE = /^[a-z][a-z0-9_]{0,63}$/;

export function unexplainedOf(change: Change): UnexplainedChange {
  return {
    activity_id: change.id,
    time: iso(change.time),
    // Security: the type is shown to the owner as the broker's own words; anything but an
    // identifier (a server or an app could send any text) is not shown as such.
    type: ACTIVITY_TYPE.test(change.type) ? change.type : 'unknown_type',
    path: shownPath(change),
    ...(change.oldPath === undefined ? {} : { old_path: change.oldPath }),
  };
}

/** A report of an account that could not be compared. */
export function notCompared(
  account: ReconcileAccount,
  status: 'off' | 'unreachable',
  problem: string,
): ReconcileReport {
  const { name: instance, instances, user } = account;
  return {
    instance,
    instances,
    user,
    status,
    from: null,
    rows: 0,
    explained: 0,
    unexplained: [],
    problem,
  };
}
