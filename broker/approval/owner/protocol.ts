/**
 * The owner socket's protocol (`<data_dir>/owner.sock`, docs/contracts.md §6): one JSON
 * line in, one JSON line out, then the broker closes the connection. The owner's
 * commands (`broker approve`, `deny`, `revoke`, `status`, `grants`, `pins`, `unpin`) are
 * its only clients; `broker pair` holds a conversation instead: its request, then lines
 * from the broker as the pairing goes (`PairLine`), one answer of the owner's
 * (`PairAnswer`), and the last line, after which the broker closes.
 */
import { z } from 'zod';
import type { GrantRecord, RequestRecord } from '../../base/domain.js';
import { DEFAULT_KIND } from '../../base/kinds.js';
import { iso } from '../../base/time.js';
import type { UndoAnswer } from '../../operations/undo/service.js';
import type { ReconcileReport } from '../../operations/reconcile/report.js';
import { isRequestId } from '../../nextcloud/answers.js';

/** The socket's file name in data_dir. */
export const OWNER_SOCKET_FILE = 'owner.sock';

/** Longest request line the broker reads; a command is at most 200 characters. */
export const MAX_REQUEST_BYTES = 4096;

const DeviceIdSchema = z.string().min(1).max(255);

/** The most request ids one `requests` line carries. */
export const MAX_RECORDED_IDS = 100;

/**
 * A typed command (the approval language), a read-only listing, an unpin, or the start
 * of a pairing (`expect`: the one device this pairing may pin).
 */
export const OwnerRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('command'), text: z.string() }),
  z.object({ op: z.literal('grants') }),
  z.object({ op: z.literal('status') }),
  z.object({ op: z.literal('pins') }),
  z.object({ op: z.literal('unpin'), device: DeviceIdSchema }),
  z.object({ op: z.literal('pair'), expect: DeviceIdSchema.optional() }),
  // `broker reconcile` now (`since`: an ISO time, else from the cursor).
  z.object({
    op: z.literal('reconcile'),
    since: z
      .string()
      .refine((s) => Number.isFinite(Date.parse(s)))
      .optional(),
    instance: z.string().optional(),
  }),
  // `broker doctor`'s request ids, to be recorded (`nc_requests`, source `doctor`).
  // Security: only values that read as Nextcloud's request ids reach the audit log.
  z.object({
    op: z.literal('requests'),
    instance: z.string(),
    ids: z.array(z.string().refine(isRequestId)).max(MAX_RECORDED_IDS),
  }),
]);
export type OwnerRequest = z.infer<typeof OwnerRequestSchema>;

/** The owner's answer at `broker pair`'s prompt: pin the device shown, or not. */
export const PairAnswerSchema = z.object({ op: z.literal('confirm'), pin: z.boolean() });
export type PairAnswer = z.infer<typeof PairAnswerSchema>;

/** A session of the approver's account, as the crypto layer identified it. */
const DeviceJsonSchema = z.object({
  device_id: z.string(),
  ed25519: z.string(),
  /** The display name its session chose: anyone's to set, shown as a hint only. */
  name: z.string().nullable(),
});
export type DeviceJson = z.infer<typeof DeviceJsonSchema>;

/**
 * How a pairing ended: a device `pinned`, or nothing pinned because the owner said no,
 * two devices sent the code, `--expect` named another, the device was pinned already,
 * time ran out, `broker pair` went away, the pin could not be saved or audited, or
 * another pairing was running.
 */
export const PAIRING_OUTCOMES = [
  'pinned',
  'declined',
  'several_devices',
  'not_expected',
  'already_pinned',
  'expired',
  'cancelled',
  'failed',
  'busy',
] as const;
export type PairingOutcome = (typeof PAIRING_OUTCOMES)[number];

/** What `broker pair` hears: the code, then how the pairing goes, then how it ended. */
export const PairLineSchema = z.discriminatedUnion('stage', [
  z.object({
    stage: z.literal('code'),
    code: z.string(),
    expires_at: z.string(),
    valid_ms: z.number(),
    expect: z.string().nullable(),
  }),
  z.object({ stage: z.literal('wrong_code'), device: DeviceJsonSchema }),
  z.object({ stage: z.literal('claimed'), device: DeviceJsonSchema, confirm_by: z.string() }),
  z.object({
    stage: z.literal('ended'),
    outcome: z.enum(PAIRING_OUTCOMES),
    devices: z.array(DeviceJsonSchema),
    message: z.string().nullable(),
  }),
  z.object({ stage: z.literal('failed'), error: z.string(), next_step: z.string() }),
]);
export type PairLine = z.infer<typeof PairLineSchema>;

/** A pinned device as `broker pins --json` prints it. */
export interface PinJson {
  device_id: string;
  ed25519: string;
  /** `config`: matrix.approver_devices; `paired`: with `broker pair`. */
  origin: 'config' | 'paired';
  paired_at: string | null;
}

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
      pins?: PinJson[];
      unpinned?: PinJson;
      /** What an `undo` did (`broker undo`). */
      undo?: UndoAnswer;
      /** `reconcile`: one report per Nextcloud account. */
      reports?: ReconcileReport[];
    }
  | { ok: false; error: string; next_step: string };

/** Reads a request line; undefined for anything else. */
export function parseOwnerRequest(line: string): OwnerRequest | undefined {
  return parseLine(line, OwnerRequestSchema);
}

/** Reads one JSON line with `schema`; undefined for anything else. */
export function parseLine<T>(line: string, schema: z.ZodType<T>): T | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
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
    kind: g.kind ?? DEFAULT_KIND,
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
