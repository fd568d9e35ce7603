import { createRequire } from 'node:module';
import type CliProgress from 'cli-progress';

/** cli-progress, loaded only when a bar is drawn (most runs draw none). */
const loadCliProgress = (): typeof CliProgress =>
  createRequire(import.meta.url)('cli-progress') as typeof CliProgress;

/** Transfers smaller than this finish too fast for a bar to help. */
export const PROGRESS_MIN_BYTES = 4 * 1024 * 1024;

export interface Progress {
  add(bytes: number): void;
  stop(): void;
}

/**
 * A progress bar on stderr for transfers over a few MB, only when stderr is a
 * terminal (stdout carries the one JSON result and stays clean).
 */
export function progressFor(
  label: string,
  total: number | null,
  stream: NodeJS.WriteStream = process.stderr,
): Progress {
  if (!stream.isTTY || total === null || total < PROGRESS_MIN_BYTES) {
    return { add: () => undefined, stop: () => undefined };
  }
  const cliProgress = loadCliProgress();
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {value}/{total} MiB | {eta_formatted} left`,
      formatValue: (v, _o, type) =>
        type === 'value' || type === 'total' ? (v / 1048576).toFixed(1) : String(v),
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  let done = 0;
  return {
    add: (n) => {
      done += n;
      bar.update(done);
    },
    stop: () => bar.stop(),
  };
}
