/**
 * A transfer's progress as MCP progress notifications, for a tool call that asked for
 * them (a progressToken); without one, nothing at all (never the terminal bar: this
 * process's output belongs to the protocol).
 */
import type { Progress, ProgressFactory } from '../transfer/progress.js';

/** Sends one notifications/progress for the call (bytes so far, total when known). */
export type ProgressSink = (progress: number, total: number | null, message: string) => void;

/** At most this often while bytes arrive; the last byte is always reported. */
const EVERY_MS = 500;

const quiet: Progress = { add: () => undefined, stop: () => undefined };

export function progressNotifier(
  sink: ProgressSink | undefined,
  now: () => number = Date.now,
): ProgressFactory {
  if (sink === undefined) return () => quiet;
  return (label, total) => {
    let done = 0;
    let sent = 0;
    let sentAt = -Infinity;
    const send = (): void => {
      // MCP: each notification's progress is larger than the last one's.
      if (done <= sent) return;
      sent = done;
      sentAt = now();
      const of = total !== null ? ` of ${total}` : '';
      sink(done, total, `${label}: ${done}${of} bytes`);
    };
    return {
      add: (n) => {
        done += n;
        if ((total !== null && done >= total) || now() - sentAt >= EVERY_MS) send();
      },
      stop: () => {
        if (total === null) send();
      },
    };
  };
}
