/**
 * What the pipeline uses of its collaborators, as structural interfaces: the real
 * GrantStore, AuditLog, NextcloudClient and approval gateway satisfy them, and nothing
 * else of those modules is reachable from here.
 */
import type { Readable } from 'node:stream';
import type { GrantRecord, Mode, RequestRecord } from '../base/domain.js';

export interface GrantsPort {
  /** Grants in force now: not ended and `now < expiresAt`. */
  activeGrants(): GrantRecord[];
  /** Grants not yet ended, past their expiry or not, frozen (the wall checks expiry). */
  unendedGrants(): readonly GrantRecord[];
  grant(id: number): GrantRecord | undefined;
  getRequest(id: number): RequestRecord | undefined;
  createRequest(input: {
    instance: string;
    reason: string;
    items: { path: string; mode: Mode }[];
  }): RequestRecord;
  decide(id: number, d: { kind: 'deny'; by: string }): { ok: boolean };
  expirePending(timeoutMs: number): RequestRecord[];
  discardAllPending(): RequestRecord[];
  expireGrants(): GrantRecord[];
}

export interface AuditPort {
  /** Resolves only once the line is durable; rejects when it cannot be written. */
  append(event: string, fields: Record<string, unknown>): Promise<unknown>;
}

export interface GatewayPort {
  healthy(): boolean;
  postRequest(request: RequestRecord): Promise<void>;
  /** `html`: the same notice for Matrix's formatted_body. */
  announce(text: string, html?: string): Promise<void>;
}

/** A notice for the owner, plain and HTML (built by broker/approval/format.ts). */
export interface NoticeText {
  plain: string;
  html: string;
}

/**
 * How the broker's own notices to the owner are worded. Injected (the approval layer
 * words them) so agent paths in them are escaped and capped like every other message.
 */
export interface OwnerNotices {
  grantsEnded(grants: readonly GrantRecord[], why: 'expired'): NoticeText;
  requestsEnded(requests: readonly RequestRecord[], why: 'expired' | 'discarded'): NoticeText;
}

export interface EntryLike {
  name: string;
  path: string;
  kind: 'file' | 'folder';
  size: number | null;
  modified: string | null;
  etag: string | null;
}

export type WriteCondition =
  { ifMatch: string; lockToken?: string } | { ifNoneMatch: '*' } | { lockToken: string };

/** The Nextcloud verbs the pipeline calls, always with a canonical path from the wall. */
export interface NextcloudPort {
  list(
    path: string,
    cursor?: string,
    pageSize?: number,
  ): Promise<{ entries: EntryLike[]; next?: string }>;
  stat(path: string): Promise<EntryLike>;
  readStream(
    path: string,
    range?: { start: number; end?: number },
  ): Promise<{ stream: Readable; size: number | null; etag: string | null }>;
  writeStream(
    path: string,
    body: Readable,
    cond: WriteCondition,
    size?: number,
  ): Promise<{ etag: string | null }>;
  mkdir(path: string): Promise<void>;
  move(from: string, to: string): Promise<void>;
  trash(path: string): Promise<void>;
  lock(path: string, timeoutSeconds: number): Promise<{ token: string }>;
  unlock(path: string, token: string): Promise<void>;
  capabilities(): Promise<{ undelete: boolean; locking: boolean }>;
}
