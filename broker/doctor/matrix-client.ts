/**
 * The three Client-Server API calls the gateway's preflight makes, over fetch, for the
 * doctor. Not matrix-js-sdk: its per-request timeout timers are never cleared, which
 * would keep a one-shot command alive for the whole timeout after it has finished.
 * Failures carry `errcode` and `httpStatus` like the SDK's errors, which is what
 * preflight classifies.
 */
import type { MatrixConfig } from '../config.js';
import type { PreflightClient } from '../approval/matrix/preflight.js';
import { CodedError } from '../base/coded-error.js';

/** `unreachable`: no answer (no `httpStatus`); `http`: an error status, with Matrix's `errcode`. */
export type MatrixCallErrorCode = 'unreachable' | 'http';

export class MatrixCallError extends CodedError<MatrixCallErrorCode> {
  override readonly name = 'MatrixCallError';
  constructor(
    message: string,
    readonly httpStatus?: number,
    readonly errcode?: string,
  ) {
    super(httpStatus === undefined ? 'unreachable' : 'http', message);
  }
}

async function get(
  cfg: MatrixConfig,
  path: string,
  timeoutMs: number,
  postBody?: unknown,
): Promise<unknown> {
  const url = new URL(`${cfg.homeserver.replace(/\/+$/, '')}/_matrix/client/v3/${path}`);
  let res: Response;
  try {
    res = await fetch(url, {
      ...(postBody === undefined ? {} : { method: 'POST', body: JSON.stringify(postBody) }),
      headers: {
        authorization: `Bearer ${cfg.bot_token}`,
        accept: 'application/json',
        'content-type': 'application/json',
      },
      // Security: the token goes only to the configured homeserver, never to a redirect.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const code = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
    // No httpStatus: preflight reports the homeserver as unreachable.
    throw new MatrixCallError(typeof code === 'string' ? code : 'network error');
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const errcode = (body as { errcode?: unknown } | undefined)?.errcode;
    throw new MatrixCallError(
      `HTTP ${res.status}`,
      res.status,
      typeof errcode === 'string' ? errcode : undefined,
    );
  }
  return body;
}

/** What the doctor asks beyond preflight: the devices (and keys) of a user. */
export interface DoctorMatrixClient extends PreflightClient {
  queryKeys?(userId: string): Promise<unknown>;
}

export function fetchPreflightClient(cfg: MatrixConfig, timeoutMs: number): DoctorMatrixClient {
  const room = (roomId: string) => `rooms/${encodeURIComponent(roomId)}`;
  return {
    queryKeys: (userId) => get(cfg, 'keys/query', timeoutMs, { device_keys: { [userId]: [] } }),
    whoami: () => get(cfg, 'account/whoami', timeoutMs),
    getJoinedRoomMembers: (roomId) => get(cfg, `${room(roomId)}/joined_members`, timeoutMs),
    getStateEvent: (roomId, type, key) =>
      get(
        cfg,
        `${room(roomId)}/state/${encodeURIComponent(type)}/${encodeURIComponent(key)}`,
        timeoutMs,
      ),
  };
}
