/**
 * The demo's log output: the broker's JSON lines turned into short human lines on
 * stderr, since the demo runs in the same terminal as the approval console. The lines
 * arrive already scrubbed by the broker's logger.
 */
import type { JsonObject } from '../base/protocol.js';

/** Config warnings the demo causes on purpose (its fake Nextcloud speaks http on loopback). */
function expectedInDemo(entry: JsonObject): boolean {
  return (
    entry['msg'] === 'config' &&
    typeof entry['warning'] === 'string' &&
    entry['warning'].includes('plain http')
  );
}

export function demoLogSink(write: (text: string) => void): (line: string) => void {
  return (line) => {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      write(line.endsWith('\n') ? line : `${line}\n`);
      return;
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      write(`${line.trimEnd()}\n`);
      return;
    }
    const fields = entry as JsonObject;
    if (expectedInDemo(fields)) return;
    const { ts: _ts, level, msg, ...rest } = fields;
    const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
    write(`broker ${String(level)}: ${String(msg)}${extra}\n`);
  };
}
