/**
 * Checks, before the gateway syncs, that the configured Matrix setup is the one the
 * security model assumes: the token is the bot's, the bot and the approver are in the
 * room, the room is invite-only and encrypted exactly when `matrix.encryption` is
 * `required`. Refuses to start otherwise, with a
 * message that names the fix. Also used on the synced room state after PREPARED.
 */
import type { Room } from 'matrix-js-sdk';
import { z } from 'zod';
import type { MatrixConfig } from '../../config.js';
import { MatrixGatewayError } from './errors.js';

/** What preflight needs of a MatrixClient. */
export interface PreflightClient {
  whoami(): Promise<unknown>;
  getJoinedRoomMembers(roomId: string): Promise<unknown>;
  getStateEvent(roomId: string, eventType: string, stateKey: string): Promise<unknown>;
}

const WhoamiSchema = z.object({ user_id: z.string() });
const JoinedMembersSchema = z.object({ joined: z.record(z.string(), z.unknown()) });
const JoinRulesSchema = z.object({ join_rule: z.string() });

export function encryptedRoomMessage(roomId: string): string {
  return `room ${roomId} is encrypted but matrix.encryption is off; set matrix.encryption: required and pin the approver's devices (matrix.approver_devices; broker doctor lists them), or use an unencrypted invite-only room`;
}

export function notEncryptedRoomMessage(roomId: string): string {
  return `room ${roomId} is not encrypted but matrix.encryption is required; turn on encryption in the room's settings (Element: Room settings → Security & Privacy → Encrypted), or set matrix.encryption: off`;
}

/** True when the configuration asks for an encrypted room (§11.1). */
export function encryptionRequired(cfg: Pick<MatrixConfig, 'encryption'>): boolean {
  return cfg.encryption === 'required';
}

export function notInviteOnlyMessage(roomId: string, rule: string): string {
  return `room ${roomId} has join rule "${rule.slice(0, 32)}"; the approval room must be invite-only (join rule "invite"); change it or create an invite-only room`;
}

interface SdkError {
  errcode?: unknown;
  httpStatus?: unknown;
  name?: unknown;
}

function errcodeOf(err: unknown): string | undefined {
  const e = err as SdkError | null;
  return typeof e?.errcode === 'string' ? e.errcode : undefined;
}

function statusOf(err: unknown): number | undefined {
  const e = err as SdkError | null;
  return typeof e?.httpStatus === 'number' ? e.httpStatus : undefined;
}

function short(err: unknown): string {
  const code = errcodeOf(err);
  const status = statusOf(err);
  if (code !== undefined) return status === undefined ? code : `${status} ${code}`;
  if (status !== undefined) return `HTTP ${status}`;
  return err instanceof Error ? err.name : 'unknown error';
}

/**
 * Maps a failure that is not about the room to unauthorized (a configuration problem)
 * or unreachable (network error, 5xx, 429: transient; the gateway may start and retry).
 */
function transportError(err: unknown, cfg: MatrixConfig): MatrixGatewayError | undefined {
  const code = errcodeOf(err);
  if (code === 'M_UNKNOWN_TOKEN' || code === 'M_MISSING_TOKEN' || statusOf(err) === 401) {
    return new MatrixGatewayError(
      'unauthorized',
      `the homeserver refused matrix.bot_token (${short(err)}); create a new access token for ${cfg.bot_user}`,
      { cause: err },
    );
  }
  // A rate limit is the server being busy, not a wrong setup: retried like an outage.
  if (code === 'M_LIMIT_EXCEEDED' || statusOf(err) === 429) {
    return new MatrixGatewayError(
      'unreachable',
      `the Matrix homeserver ${cfg.homeserver} is rate-limiting the bot (${short(err)}); wait, or exempt ${cfg.bot_user} from rate limits`,
      { cause: err },
    );
  }
  if (statusOf(err) === undefined || (statusOf(err) ?? 0) >= 500) {
    return new MatrixGatewayError(
      'unreachable',
      `cannot reach the Matrix homeserver ${cfg.homeserver} (${short(err)}); check matrix.homeserver and that the server is up`,
      { cause: err },
    );
  }
  return undefined;
}

async function call<T>(
  cfg: MatrixConfig,
  run: () => Promise<unknown>,
  schema: z.ZodType<T>,
  what: string,
  onOther: (err: unknown) => MatrixGatewayError | 'absent',
): Promise<T | undefined> {
  let raw: unknown;
  try {
    raw = await run();
  } catch (err) {
    const t = transportError(err, cfg);
    if (t) throw t;
    const other = onOther(err);
    if (other === 'absent') return undefined;
    throw other;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new MatrixGatewayError(
      'bad_response',
      `the homeserver answered ${what} with an unexpected shape; is matrix.homeserver a Matrix server?`,
    );
  }
  return parsed.data;
}

export interface PreflightResult {
  /** Members other than the bot and the approver (they see requests; they cannot act). */
  others: string[];
}

export async function preflight(
  client: PreflightClient,
  cfg: MatrixConfig,
): Promise<PreflightResult> {
  const rethrow = (err: unknown): MatrixGatewayError =>
    new MatrixGatewayError(
      'bad_response',
      `unexpected answer from the homeserver (${short(err)})`,
      {
        cause: err,
      },
    );
  const me = await call(cfg, () => client.whoami(), WhoamiSchema, 'whoami', rethrow);
  // Security: the token must be the configured bot's, or "events the bot sent" (the
  // only messages whose reactions count) would mean someone else's messages.
  if (me?.user_id !== cfg.bot_user) {
    throw new MatrixGatewayError(
      'wrong_user',
      `matrix.bot_token belongs to ${me?.user_id ?? 'nobody'}, not matrix.bot_user ${cfg.bot_user}; use the bot's token or fix matrix.bot_user`,
    );
  }
  const room = cfg.room_id;
  const members = await call(
    cfg,
    () => client.getJoinedRoomMembers(room),
    JoinedMembersSchema,
    'joined_members',
    (err) =>
      new MatrixGatewayError(
        'not_joined',
        `the bot ${cfg.bot_user} is not joined to room ${room} (${short(err)}); invite the bot and accept the invite as the bot, or fix matrix.room_id`,
        { cause: err },
      ),
  );
  const joined = Object.keys(members?.joined ?? {});
  if (!joined.includes(cfg.bot_user)) {
    throw new MatrixGatewayError(
      'not_joined',
      `the bot ${cfg.bot_user} is not joined to room ${room}; invite the bot and accept the invite as the bot, or fix matrix.room_id`,
    );
  }
  if (!joined.includes(cfg.approver)) {
    throw new MatrixGatewayError(
      'approver_not_member',
      `the approver ${cfg.approver} is not joined to room ${room}; invite them and accept, or fix matrix.approver`,
    );
  }
  const notFound = (err: unknown): MatrixGatewayError | 'absent' =>
    errcodeOf(err) === 'M_NOT_FOUND' || statusOf(err) === 404 ? 'absent' : rethrow(err);
  const encryption = await call(
    cfg,
    () => client.getStateEvent(room, 'm.room.encryption', ''),
    z.unknown(),
    'the encryption state',
    notFound,
  );
  // Security: the room must be what matrix.encryption says. With `required`, a clear-text
  // room would make every decision the homeserver's to forge; with `off`, the bot could
  // read nothing in an encrypted room. Encryption cannot be switched off in a room.
  if (encryptionRequired(cfg) && encryption === undefined) {
    throw new MatrixGatewayError('not_encrypted', notEncryptedRoomMessage(room));
  }
  if (!encryptionRequired(cfg) && encryption !== undefined)
    throw new MatrixGatewayError('encrypted', encryptedRoomMessage(room));
  const rules = await call(
    cfg,
    () => client.getStateEvent(room, 'm.room.join_rules', ''),
    JoinRulesSchema,
    'the join rules',
    notFound,
  );
  // Security: requests show paths and reasons; only invited people may read them.
  // A room without a join-rules event is refused too (fail closed).
  if (rules?.join_rule !== 'invite') {
    throw new MatrixGatewayError(
      'not_invite_only',
      notInviteOnlyMessage(room, rules?.join_rule ?? 'missing'),
    );
  }
  return { others: joined.filter((u) => u !== cfg.bot_user && u !== cfg.approver) };
}

/** The same room rules, on the state matrix-js-sdk synced (defence in depth after PREPARED). */
export function checkSyncedRoom(
  room: Room | null,
  roomId: string,
  cfg: Pick<MatrixConfig, 'encryption'> = {},
): void {
  if (room === null || room.getMyMembership() !== 'join') {
    throw new MatrixGatewayError('not_joined', `the bot is not joined to room ${roomId}`);
  }
  const encrypted = room.currentState.getStateEvents('m.room.encryption', '') !== null;
  if (encryptionRequired(cfg) && !encrypted) {
    throw new MatrixGatewayError('not_encrypted', notEncryptedRoomMessage(roomId));
  }
  if (!encryptionRequired(cfg) && encrypted) {
    throw new MatrixGatewayError('encrypted', encryptedRoomMessage(roomId));
  }
  const rule = room.getJoinRule();
  if (rule !== 'invite') {
    throw new MatrixGatewayError('not_invite_only', notInviteOnlyMessage(roomId, String(rule)));
  }
}
