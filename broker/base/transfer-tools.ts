/**
 * The transfer surface's tools (`POST /transfer`, docs/transfer-protocol.md), each
 * declared once: its name, its arguments, the fields of its `ok` answer, and the codes
 * it can answer with. Both programs read these: the broker's zod schemas
 * (broker/surfaces/transfer/) are checked against them both ways
 * (test/surfaces/transfer-protocol.test.ts), and the CLI calls a tool by its name
 * (cli/client/transfer/broker-client.ts), so an argument or answer field renamed here does not
 * compile there, and a code no tool answers cannot be handled.
 *
 * Types only: the agent's CLI bundle carries none of it (protocol.ts holds the
 * constants both sides share).
 */
import type { EnvelopeCode, TicketView } from './protocol.js';

/** Where a transfer tool acts: an instance and a path as the agent spells it. */
type Target = {
  instance: string;
  path: string;
};

/** A file or folder as `list` answers it (discovery lists names only). */
export interface ListedEntry {
  name: string;
  kind: 'file' | 'folder';
  path?: string;
  size?: number | null;
  modified?: string | null;
}

/** Codes of the envelope's (a code misspelt here fails to compile). */
type Codes<C extends EnvelopeCode> = C;

/** A tool's declaration: every code it names is one of the envelope's. */
type Declared<T extends Record<keyof T, { args: object; answer: object; codes: EnvelopeCode }>> = T;

/** Codes any call can be answered with before its verb runs (the MCP endpoint's own). */
type CallCode = Codes<'invalid_arguments' | 'secret_in_arguments' | 'rate_limited' | 'internal'>;

/** The wall's refusals (broker/wall.ts), and the grant that ended before the call ran. */
type WallCode = Codes<
  'invalid_path' | 'unknown_instance' | 'no_grant' | 'grant_revoked' | 'grant_expired'
>;

/** A call the wall allowed: its intent line must be written first. */
type PipelineCode = CallCode | WallCode | 'audit_unavailable';

/** What Nextcloud's answers to a file verb become (broker/operations/nextcloud-errors.ts). */
type NextcloudFileCode = Codes<
  | 'invalid_path'
  | 'invalid_arguments'
  | 'permission'
  | 'not_found'
  | 'conflict'
  | 'locking_unavailable'
  | 'lock_token_unknown'
  | 'locked'
  | 'not_a_file'
  | 'not_a_folder'
  | 'nextcloud_auth'
  | 'insufficient_storage'
  | 'nextcloud_unavailable'
  | 'nextcloud_error'
  | 'aborted'
  | 'verification_failed'
>;

/** Each transfer tool: `args` it takes, the fields of its `ok` answer, the `codes` it answers. */
export type TransferTools = Declared<{
  /** The wall alone: whether `mode` is allowed on the path now, and until when. */
  check_access: {
    args: Target & { mode: 'read' | 'write' };
    answer: { path: string; mode: 'read' | 'write'; expires_at?: string };
    codes: CallCode | WallCode;
  };
  /** One page of a folder, for `broker fetch --recursive` (`next` is the envelope's). */
  list: {
    args: Target & { cursor?: string };
    answer: { path: string; discovery: boolean; entries: ListedEntry[] };
    codes: PipelineCode | NextcloudFileCode;
  };
  /** A download ticket; size and etag come with the bytes (null here). */
  read: {
    args: Target;
    answer: { path: string; size: number | null; etag: string | null } & TicketView;
    codes: PipelineCode;
  };
  /** An upload ticket: create (`if_none_match`), replace (`if_match`) or under a lock. */
  write: {
    args: Target & {
      size: number;
      if_match?: string;
      if_none_match?: '*';
      lock_token?: string;
      sha256?: string;
    };
    answer: { path: string; size: number; etag?: string | null } & TicketView;
    codes: PipelineCode | NextcloudFileCode | 'insufficient_space';
  };
  /** A LOCK on the file and a download ticket. */
  checkout: {
    args: Target & { timeout_s?: number };
    answer: {
      path: string;
      lock_token: string;
      lock_expires_at: string;
      size: number | null;
      etag: string | null;
    } & TicketView;
    codes: PipelineCode | NextcloudFileCode;
  };
  /** An upload ticket under the checkout's lock, or (`abandon`) the lock released. */
  checkin: {
    args: Target & { lock_token: string; size?: number; sha256?: string; abandon?: boolean };
    answer:
      | { path: string; unlocked: boolean; etag: string | null }
      | ({ path: string; size: number } & TicketView);
    codes: PipelineCode | NextcloudFileCode | 'insufficient_space';
  };
}>;

export type TransferToolName = keyof TransferTools;
export type TransferArgs<N extends TransferToolName> = TransferTools[N]['args'];
export type TransferAnswer<N extends TransferToolName> = TransferTools[N]['answer'];
export type TransferCode<N extends TransferToolName = TransferToolName> = TransferTools[N]['codes'];

/** What the blob endpoint (`GET`/`PUT /transfer/blobs/<ticket>`) answers a refused or failed transfer with. */
export type BlobCode = Codes<
  PipelineCode | NextcloudFileCode | 'ticket_invalid' | 'too_large' | 'insufficient_space'
>;

/** Every code the transfer protocol answers with: a tool's, or the blob endpoint's. */
export type TransferProtocolCode = TransferCode | BlobCode;

/**
 * The answer fields of a tool a client may read, by their declared names; each value is
 * what arrived (checked where it is read: an answer comes over the network).
 */
export type ReceivedAnswer<N extends TransferToolName> = {
  readonly [
    K in TransferAnswer<N> extends infer A ? (A extends unknown ? keyof A : never) : never
  ]?: unknown;
};
