/** What the Matrix gateway can be tuned with, and the defaults it runs on. */

export interface MatrixGatewayOptions {
  /** Timeline events in the first sync (they are ignored; only state matters). Default 10. */
  initialSyncLimit?: number;
  /** Long-poll timeout of /sync. Default 30 s. */
  pollTimeoutMs?: number;
  /** How long start() waits for the first sync. Default 60 s. */
  preparedTimeoutMs?: number;
  /** Timeout of each non-sync request (send, redact, lookups). Default 20 s. */
  requestTimeoutMs?: number;
  /** healthy() stays false this long after a failed send. Default 60 s. */
  sendFailureWindowMs?: number;
  /**
   * While sync is failing, ask the SDK to retry now every this many ms (on top of its
   * own 2-10 s keep-alive backoff). Default: off.
   */
  reconnectNudgeMs?: number;
  /** Event ids remembered as handled. Default 10 000. */
  handledLimit?: number;
  /**
   * The most events of a gap in the sync read back (/messages); a longer gap is not
   * acted on, and the owner is told. Default 1 000.
   */
  gapReadLimit?: number;
  /** Device id for the access token, when the homeserver needs it. */
  deviceId?: string;
  /**
   * When the homeserver cannot be reached at start (network error, 5xx, 429, or no
   * first sync in time), resolve start() anyway with the channel unavailable, and keep
   * retrying in the background (docs/architecture.md: approval down ⇒ request_access answers
   * error; existing grants keep working). Configuration problems (token, membership,
   * room rules) still throw. Default true.
   */
  startWhileUnreachable?: boolean;
  /** Longest wait between those retries. Default 30 s. */
  startRetryMs?: number;
  /** First wait; it doubles after each failed retry, up to startRetryMs. Default 1 s. */
  startRetryFirstMs?: number;
}

export type ResolvedOptions = Required<
  Omit<MatrixGatewayOptions, 'deviceId' | 'reconnectNudgeMs'>
> &
  Pick<MatrixGatewayOptions, 'deviceId' | 'reconnectNudgeMs'>;

export function resolveOptions(o: MatrixGatewayOptions = {}): ResolvedOptions {
  return {
    initialSyncLimit: o.initialSyncLimit ?? 10,
    pollTimeoutMs: o.pollTimeoutMs ?? 30_000,
    preparedTimeoutMs: o.preparedTimeoutMs ?? 60_000,
    requestTimeoutMs: o.requestTimeoutMs ?? 20_000,
    sendFailureWindowMs: o.sendFailureWindowMs ?? 60_000,
    handledLimit: o.handledLimit ?? 10_000,
    gapReadLimit: o.gapReadLimit ?? 1_000,
    startWhileUnreachable: o.startWhileUnreachable ?? true,
    startRetryMs: o.startRetryMs ?? 30_000,
    startRetryFirstMs: o.startRetryFirstMs ?? 1_000,
    deviceId: o.deviceId,
    reconnectNudgeMs: o.reconnectNudgeMs,
  };
}
