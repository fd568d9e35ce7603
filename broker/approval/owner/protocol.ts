/**
 * The owner socket's protocol (`<data_dir>/owner.sock`, docs/contracts.md §6): one JSON
 * line in, one JSON line out, then the broker closes the connection. The owner's
 * commands (`broker approve`, `deny`, `revoke`, `status`, `grants`) are its only client.
 */
import type { GrantRecord, RequestRecord } from '../../base/domain.js';
import { iso } from '../../base/time.js';
import type { ReconcileReport } from '../../operations/reconcile/report.js';
import { isRequestId } from '../../nextcloud/answers.js';

/** The socket's file name in data_dir. */
export const OWNER_SOCKET_FILE = 'owner.sock';

/** Longest request line the broker reads; a command is at most 200 characters. */
export const MAX_REQUEST_BYTES = 4096;

/**
 * A typed command (the approval language), one of the two read-only listings, or a
 * reconciliation now (`broker reconcile`; `since`: an ISO time, else from the cursor).
 */
export type OwnerRequest =
  | { readonly op: 'command'; readonly text: string }
  | { readonly op: 'grants' }
  | { readonly op: 'status' }
  | { readonly op: 'reconcile'; readonly since?: string; readonly instance?: string }
  /** `broker doctor`'s request ids, to be recorded (`nc_requests`, source `doctor`). */
  | { readonly op: 'requests'; readonly instance: string; readonly ids: readonly string[] };

/** The most request ids one `requests` line carries. */
export const MAX_RECORDED_IDS = 100;

/** An active grant as `broker grants --json` prints it. */
export interface GrantJson {
  id: number;
  request: number;
  instance: string;
  kind: string;
  path: string;
  mode: string;
  expires_at: string;
  expires_in_ms: number;
  /** The last operation that relied on it since the broker started; null: none. */
  last_used_at: string | null;
}

export interface PendingJson {
  request: number;
  instance: string;
  items: { n: number; kind: string; path: string; mode: string }[];
  expires_at: string;
}

export type OwnerResponse =
  | {
      ok: true;
      /** What the console would have printed, for a person. */
      text: string;
      /** A command that changed nothing because it was refused (exit 3). */
      refused?: boolean;
      granted?: GrantJson[];
      revoked?: GrantJson[];
      grants?: GrantJson[];
      pending?: PendingJson[];
      /** `reconcile`: one report per Nextcloud account. */
      reports?: ReconcileReport[];
    }
  | { ok: false; error: string; next_step: string };

/** Reads a request line; undefined for anything else. */
export function parseOwnerRequest(line: string): OwnerRequest | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v['op'] === 'grants' || v['op'] === 'status') return { op: v['op'] };
  if (v['op'] === 'command' && typeof v['text'] === 'string')
    return { op: 'command', text: v['text'] };
  if (v['op'] === 'requests') {
    const { instance, ids } = v;
    // Security: only values that read as Nextcloud's request ids reach the audit log.
    if (typeof instance !== 'string' || !Array.isArray(ids) || ids.length > MAX_RECORDED_IDS)
      return undefined;
    if (!ids.every(isRequestId)) return undefined;
    return { op: 'requests', instance, ids };
  }
  if (v['op'] === 'reconcile') {
    const since = v['since'];
    const instance = v['instance'];
    if (since !== undefined && (typeof since !== 'string' || !Number.isFinite(Date.parse(since))))
      return undefined;
    if (instance !== undefined && typeof instance !== 'string') return undefined;
    return {
      op: 'reconcile',
      ...(since === undefined ? {} : { since }),
      ...(instance === undefined ? {} : { instance }),
    };
  }
  return undefined;
}

export function grantJson(
  g: GrantRecord,
  now: number,
  lastUsed: (id: number) => number | undefined = () => undefined,
): GrantJson {
  const used = lastUsed(g.id);
  return {
    id: g.id,
    request: g.requestId,
    instance: g.instance,
    kind: g.kind ?? 'files',
    path: g.path,
    mode: g.mode,
    expires_at: iso(g.expiresAt),
    expires_in_ms: Math.max(0, g.expiresAt - now),
    last_used_at: used === undefined ? null : iso(used),
  };
}

export function pendingJson(r: RequestRecord, pendingTimeout: number): PendingJson {
  return {
    request: r.id,
    instance: r.instance,
    items: r.items.map((i) => ({ n: i.n, kind: i.kind, path: i.path, mode: i.mode })),
    expires_at: iso(r.createdAt + pendingTimeout),
  };
}
