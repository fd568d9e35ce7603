/**
 * Structured JSON logging to an injected sink. Every line passes the scrubber first.
 * Security: secrets must never reach a log line, so the scrubber runs on the whole
 * serialised line, not on chosen fields.
 */
import { iso } from './time.js';
import type { JsonObject } from './protocol.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: JsonObject): void;
  info(msg: string, fields?: JsonObject): void;
  warn(msg: string, fields?: JsonObject): void;
  error(msg: string, fields?: JsonObject): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerDeps {
  level: LogLevel;
  /** Removes every configured secret from a text. */
  scrub: (text: string) => string;
  /** Receives one complete line, newline included (stderr in production). */
  write: (line: string) => void;
  now: () => number;
}

export function createLogger(deps: LoggerDeps): Logger {
  const emit = (level: LogLevel, msg: string, fields?: JsonObject): void => {
    if (RANK[level] < RANK[deps.level]) return;
    let line: string;
    try {
      line = JSON.stringify({ ts: iso(deps.now()), level, msg, ...fields });
    } catch {
      line = JSON.stringify({ ts: iso(deps.now()), level, msg });
    }
    deps.write(`${deps.scrub(line)}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

/** A logger that drops everything: the default where a logger is optional. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** A logger that keeps lines in memory, for tests. */
export function memoryLogger(scrub: (text: string) => string = (t) => t): Logger & {
  lines: string[];
} {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    scrub,
    write: (line) => lines.push(line),
    now: () => 0,
  });
  return Object.assign(logger, { lines });
}
