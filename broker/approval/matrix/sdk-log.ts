/**
 * Sends matrix-js-sdk's own log lines through the broker's Logger instead of the
 * console. Security: the broker's logger scrubs every line, so whatever the SDK
 * prints (URLs, error bodies) passes the secret scrubber like everything else.
 */
import { logger as sdkGlobalLogger } from 'matrix-js-sdk/lib/logger.js';
import type { Logger as SdkLogger } from 'matrix-js-sdk/lib/logger.js';
import type { Logger } from '../../base/log.js';

const MAX_LINE = 1000;
const MAX_SCOPE = 100;

function describe(arg: unknown): string {
  if (typeof arg === 'string') return arg;
  if (arg instanceof Error) return `${arg.name}: ${arg.message}`;
  try {
    return JSON.stringify(arg) ?? String(arg);
  } catch {
    return String(arg);
  }
}

export function sdkLine(args: readonly unknown[]): string {
  const line = args.map(describe).join(' ');
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line;
}

type Level = 'debug' | 'warn';

interface LoglevelLike {
  methodFactory: (method: string) => (...args: unknown[]) => void;
  rebuild(): void;
}

/**
 * The SDK reports every transient network failure as an error; for the broker those
 * are warnings at most (the gateway reports its own health), and chatter is debug.
 */
function levelOf(method: string): Level {
  return method === 'error' || method === 'warn' ? 'warn' : 'debug';
}

/**
 * A matrix-js-sdk Logger that writes to `logger`, for `createClient({ logger })`. Every
 * line's message is `matrix-sdk`, as for the global logger; the SDK's child loggers
 * (matrix-js-sdk 43 runs its sync loop on one named `sync`) add a `scope` field instead
 * of changing the message, so one filter on `matrix-sdk` still sees the sync loop.
 */
export function toSdkLogger(logger: Logger, scope = ''): SdkLogger {
  const fields = scope === '' ? {} : { scope };
  const at =
    (method: string) =>
    (...args: unknown[]): void => {
      logger[levelOf(method)]('matrix-sdk', { ...fields, line: sdkLine(args) });
    };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    getChild: (namespace: string) =>
      toSdkLogger(logger, (scope === '' ? namespace : `${scope} ${namespace}`).slice(0, MAX_SCOPE)),
  };
}

/**
 * Routes the SDK's process-wide logger to `logger`. In matrix-js-sdk 43 the HTTP layer
 * and the sync loop log through the client's logger (`toSdkLogger`), while the room and
 * event models, the scheduler and MatrixRTC still use this one. The SDK has one such
 * logger per process, so the last gateway to start wins; that is the daemon's only
 * gateway in production.
 */
export function routeSdkGlobalLogs(logger: Logger): void {
  // The SDK's global logger is a loglevel logger; its declared type hides that.
  const global = sdkGlobalLogger as unknown as LoglevelLike;
  global.methodFactory = (method) => {
    const level = levelOf(method);
    return (...args: unknown[]) => logger[level]('matrix-sdk', { line: sdkLine(args) });
  };
  global.rebuild();
}
