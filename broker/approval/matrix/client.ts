/**
 * The matrix-js-sdk client the gateway uses, configured for a bot that must fail fast:
 * no resend queue, bounded request time, SDK logs through the broker's logger.
 */
import { createClient, MatrixScheduler, type MatrixClient } from 'matrix-js-sdk';
import type { MatrixConfig } from '../../config.js';
import type { Logger } from '../../base/log.js';
import { toSdkLogger } from './sdk-log.js';

export function createBotClient(
  cfg: MatrixConfig,
  opts: { requestTimeoutMs: number; deviceId?: string | undefined; accessToken?: string },
  logger: Logger,
): MatrixClient {
  return createClient({
    baseUrl: cfg.homeserver,
    accessToken: opts.accessToken ?? cfg.bot_token,
    userId: cfg.bot_user,
    ...(opts.deviceId === undefined ? {} : { deviceId: opts.deviceId }),
    // No automatic resend: a request that cannot be posted now must fail now, so the
    // agent is told "unavailable" instead of waiting on a retry queue.
    scheduler: new MatrixScheduler(() => -1),
    localTimeoutMs: opts.requestTimeoutMs,
    logger: toSdkLogger(logger),
  });
}

export type EventContent = Record<string, unknown>;

/** Sends one event; the SDK types content per event type, ours is built by the caller. */
export async function sendContent(
  client: MatrixClient,
  roomId: string,
  type: string,
  content: EventContent,
): Promise<string> {
  const send = client.sendEvent as (
    roomId: string,
    type: string,
    content: EventContent,
  ) => Promise<{ event_id: string }>;
  const res = await send.call(client, roomId, type, content);
  return res.event_id;
}

/** An SDK error as `Name status errcode`, without bodies or URLs. */
export function errorSummary(err: unknown): string {
  if (err instanceof Error) {
    const e = err as Error & { errcode?: unknown; httpStatus?: unknown };
    const status = typeof e.httpStatus === 'number' ? ` ${e.httpStatus}` : '';
    const code = typeof e.errcode === 'string' ? ` ${e.errcode}` : '';
    return `${e.name}${status}${code}`;
  }
  return 'unknown error';
}
