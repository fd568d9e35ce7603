/**
 * The transfer progress line on stderr, drawn only when stderr is a terminal and the
 * transfer is large enough to need one (stdout carries the one JSON result and stays
 * clean; a log file gets no bar).
 *
 * It draws one line and redraws it in place: a carriage return, the text cut to the
 * terminal's width, then "erase to the end of the line". Nothing else: no hidden cursor,
 * no saved cursor position, no change to line wrapping, so a process killed mid-transfer
 * (Ctrl-C, also under `npx`, where npm shares the terminal) leaves the terminal as it
 * was, and whatever else wrote on the line is painted over by the next redraw.
 */
import { formatSeconds, RemainingTime } from './estimate.js';

/** Transfers smaller than this finish too fast for a bar to help. */
export const PROGRESS_MIN_BYTES = 4 * 1024 * 1024;

/** At most this often on new bytes; the timer also redraws a stalled transfer. */
const REDRAW_MS = 200;
const BAR_MAX = 30;
const MiB = 1024 * 1024;

export interface Progress {
  add(bytes: number): void;
  stop(): void;
}

/** Makes the progress of one transfer of `total` bytes (null: unknown), labelled by its command. */
export type ProgressFactory = (label: string, total: number | null) => Progress;

export interface ProgressClock {
  now(): number;
  every(ms: number, fn: () => void): () => void;
}

const systemClock: ProgressClock = {
  now: () => Date.now(),
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    // Never what keeps the CLI running.
    timer.unref();
    return () => clearInterval(timer);
  },
};

/** The text of one progress line, at most `width` characters. */
export function progressLine(
  label: string,
  done: number,
  total: number,
  secondsLeft: number | undefined,
  width: number,
): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const percent = `${Math.floor(fraction * 100)}%`;
  const amount = `${(done / MiB).toFixed(1)}/${(total / MiB).toFixed(1)} MiB`;
  const left =
    done >= total
      ? 'done'
      : secondsLeft === undefined
        ? 'estimating'
        : `${formatSeconds(secondsLeft)} left`;
  const tail = ` ${percent} | ${amount} | ${left}`;
  const room = width - 1 - label.length - 3 - tail.length;
  const barWidth = Math.min(BAR_MAX, room);
  if (barWidth < 5) return `${label}${tail}`.slice(0, Math.max(0, width - 1));
  const filled = Math.round(fraction * barWidth);
  return `${label} [${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}]${tail}`;
}

export function progressFor(
  label: string,
  total: number | null,
  stream: NodeJS.WriteStream = process.stderr,
  clock: ProgressClock = systemClock,
): Progress {
  if (stream.isTTY !== true || total === null || total < PROGRESS_MIN_BYTES) {
    return { add: () => undefined, stop: () => undefined };
  }
  const estimate = new RemainingTime(total, () => clock.now());
  let done = 0;
  let drawnAt = -Infinity;
  let stopped = false;
  const draw = (): void => {
    drawnAt = clock.now();
    const width = stream.columns > 0 ? stream.columns : 80;
    stream.write(`\r${progressLine(label, done, total, estimate.secondsLeft(), width)}\x1b[K`);
  };
  const cancel = clock.every(REDRAW_MS * 5, () => {
    estimate.update(done);
    draw();
  });
  draw();
  return {
    add: (n) => {
      done += n;
      estimate.update(done);
      if (clock.now() - drawnAt >= REDRAW_MS) draw();
    },
    stop: () => {
      if (stopped) return;
      stopped = true;
      cancel();
      // A finished transfer keeps its last line; a stopped one is erased (its error follows).
      if (done >= total) {
        draw();
        stream.write('\n');
      } else {
        stream.write('\r\x1b[K');
      }
    },
  };
}
