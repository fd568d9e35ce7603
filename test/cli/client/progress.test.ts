/**
 * The transfer progress line: drawn on a terminal for transfers over a few MB, never on
 * a pipe (stderr may be a log file) and never for small transfers; one line redrawn in
 * place with nothing to restore; and an estimate of the time left that holds steady
 * when bytes arrive in bursts. Time is injected.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatSeconds, RemainingTime } from '../../../cli/client/transfer/estimate.js';
import {
  PROGRESS_MIN_BYTES,
  progressFor,
  progressLine,
  type ProgressClock,
} from '../../../cli/client/transfer/progress.js';
import { ERASE_LINE, TERMINAL_MODES } from '../../../support/terminal.js';

const MiB = 1024 * 1024;

function terminal(
  isTTY: boolean,
  columns = 100,
): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  Object.assign(stream, { isTTY, columns });
  return { stream, text: () => text };
}

/** A clock the test moves; `every` timers fire when it passes their time. */
function manualClock(): ProgressClock & { advance(ms: number): void } {
  let now = 0;
  const timers: { ms: number; next: number; fn: () => void; on: boolean }[] = [];
  return {
    now: () => now,
    every: (ms, fn) => {
      const t = { ms, next: now + ms, fn, on: true };
      timers.push(t);
      return () => (t.on = false);
    },
    advance(ms) {
      const end = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.on && t.next <= end).sort((a, b) => a.next - b.next)[0];
        if (due === undefined) break;
        now = due.next;
        due.next += due.ms;
        due.fn();
      }
      now = end;
    },
  };
}

/** The frames drawn so far: each starts with a carriage return. */
const frames = (text: string): string[] => text.split('\r').filter((f) => f !== '');

describe('RemainingTime', () => {
  it('gives no estimate until enough time has passed', () => {
    let now = 0;
    const eta = new RemainingTime(50 * MiB, () => now);
    for (; now < 1_400; now += 100) eta.update((now / 100) * MiB);
    expect(eta.secondsLeft()).toBeUndefined();
  });

  it('stays near the truth when bytes arrive in bursts and pauses (no "0s left" at 12 %)', () => {
    // 50 MiB at 10 MiB/s on average: 2 MiB every 200 ms, delivered as 32 chunks in the
    // same millisecond, with a 600 ms stall at 40 % made up for by a burst after it.
    let now = 0;
    const total = 50 * MiB;
    const eta = new RemainingTime(total, () => now);
    let done = 0;
    const seen: { truth: number; shown: number }[] = [];
    while (done < total) {
      now += done === 20 * MiB ? 600 : 200;
      const burst = done === 20 * MiB ? 6 * MiB : 2 * MiB;
      for (let i = 0; i < 32; i += 1) {
        done = Math.min(total, done + burst / 32);
        eta.update(done);
        const shown = eta.secondsLeft();
        if (shown !== undefined && done < total) {
          seen.push({ truth: (total - done) / (10 * MiB), shown });
        }
      }
    }
    expect(seen.length).toBeGreaterThan(100);
    for (const { truth, shown } of seen) {
      expect(shown).toBeGreaterThanOrEqual(Math.floor(truth * 0.6));
      expect(shown).toBeLessThanOrEqual(Math.ceil(truth * 1.6));
    }
    expect(eta.secondsLeft()).toBe(0);
  });

  it('a stall makes the estimate grow, never drop to zero', () => {
    let now = 0;
    const eta = new RemainingTime(100 * MiB, () => now);
    for (; now <= 2_000; now += 250) eta.update((now / 250) * MiB);
    const before = eta.secondsLeft() ?? 0;
    for (let i = 0; i < 8; i += 1) {
      now += 250;
      eta.update(8 * MiB);
    }
    expect(eta.secondsLeft()).toBeGreaterThan(before);
  });

  it('formats seconds, minutes and hours for the end of a line', () => {
    expect(formatSeconds(7)).toBe('7s');
    expect(formatSeconds(185)).toBe('3m 05s');
    expect(formatSeconds(7_620)).toBe('2h 07m');
  });
});

describe('progressLine', () => {
  it('fits the width it is given, however narrow', () => {
    for (const width of [20, 40, 60, 80, 200]) {
      const line = progressLine('checkout', 30 * MiB, 64 * MiB, 125, width);
      expect(line.length).toBeLessThan(width);
      expect(line).toContain('46%');
    }
  });
});

describe('progressFor', () => {
  it('draws one line in place: label, percentage, MiB, then the estimate', () => {
    const t = terminal(true);
    const clock = manualClock();
    const total = 64 * MiB;
    const bar = progressFor('fetch', total, t.stream, clock);
    expect(t.text()).toMatch(/fetch \[.*\] 0% \| 0\.0\/64\.0 MiB \| estimating/);
    for (let i = 0; i < 32; i += 1) {
      clock.advance(100);
      bar.add(MiB);
    }
    expect(frames(t.text()).at(-1)).toMatch(/50% \| 32\.0\/64\.0 MiB \| \d+s left/);
    bar.add(32 * MiB);
    bar.stop();
    expect(t.text().endsWith(`100% | 64.0/64.0 MiB | done${ERASE_LINE}\n`)).toBe(true);
  });

  it('never hides the cursor, saves or restores it, or turns off line wrapping', () => {
    const t = terminal(true, 50);
    const clock = manualClock();
    const bar = progressFor('push', 64 * MiB, t.stream, clock);
    for (let i = 0; i < 64; i += 1) {
      clock.advance(300);
      bar.add(MiB);
    }
    bar.stop();
    expect(t.text()).not.toMatch(TERMINAL_MODES);
    for (const frame of frames(t.text())) {
      const line = frame.endsWith('\n') ? frame.slice(0, -1) : frame;
      expect(line.endsWith(ERASE_LINE)).toBe(true);
      expect(line.length - ERASE_LINE.length).toBeLessThan(50);
    }
  });

  it('redraws at most every 200 ms however many chunks arrive', () => {
    const t = terminal(true);
    const clock = manualClock();
    const bar = progressFor('fetch', 64 * MiB, t.stream, clock);
    for (let i = 0; i < 1000; i += 1) bar.add(1024);
    expect(frames(t.text())).toHaveLength(1);
    clock.advance(200);
    bar.add(1024);
    expect(frames(t.text())).toHaveLength(2);
  });

  it('a stopped transfer erases its line (the error follows on stderr)', () => {
    const t = terminal(true);
    const bar = progressFor('fetch', 64 * MiB, t.stream, manualClock());
    bar.add(MiB);
    bar.stop();
    bar.stop();
    expect(t.text().endsWith('\r\x1b[K')).toBe(true);
    expect(t.text()).not.toContain('\n');
  });

  it('draws nothing when stderr is not a terminal', () => {
    const t = terminal(false);
    const bar = progressFor('fetch', 64 * MiB, t.stream, manualClock());
    bar.add(1024);
    bar.stop();
    expect(t.text()).toBe('');
  });

  it('draws nothing for a small or unknown size', () => {
    for (const total of [PROGRESS_MIN_BYTES - 1, null]) {
      const t = terminal(true);
      const bar = progressFor('push', total, t.stream, manualClock());
      bar.add(10);
      bar.stop();
      expect(t.text()).toBe('');
    }
  });
});
