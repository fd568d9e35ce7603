/**
 * The transfer progress bar: drawn on a terminal for transfers over a few MB, never on
 * a pipe (stderr may be a log file) and never for small transfers.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { PROGRESS_MIN_BYTES, progressFor } from '../../cli/transfer/progress.js';

function terminal(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  Object.assign(stream, { isTTY, columns: 100, cursorTo: () => true, clearLine: () => true });
  return { stream, text: () => text };
}

describe('progressFor', () => {
  it('draws a bar with the label, percentage and MiB on a terminal', () => {
    const t = terminal(true);
    const total = 64 * 1024 * 1024;
    const bar = progressFor('fetch', total, t.stream);
    bar.add(total / 2);
    bar.add(total / 2);
    bar.stop();
    expect(t.text()).toMatch(/fetch \[/);
    expect(t.text()).toMatch(/100% \| 64\.0\/64\.0 MiB/);
  });

  it('draws nothing when stderr is not a terminal', () => {
    const t = terminal(false);
    const bar = progressFor('fetch', 64 * 1024 * 1024, t.stream);
    bar.add(1024);
    bar.stop();
    expect(t.text()).toBe('');
  });

  it('draws nothing for a small or unknown size', () => {
    for (const total of [PROGRESS_MIN_BYTES - 1, null]) {
      const t = terminal(true);
      const bar = progressFor('push', total, t.stream);
      bar.add(10);
      bar.stop();
      expect(t.text()).toBe('');
    }
  });
});
