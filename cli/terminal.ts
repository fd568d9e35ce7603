/**
 * What every command of both programs writes: the one JSON line on stdout (docs/contracts.md
 * §6) and text for a person on a terminal, each escaped so that nothing an answer or a
 * name holds can steer the terminal or split the line.
 */
import { escapeJsonLine, escapeMatching, UNSAFE_ON_TERMINAL } from '../broker/base/text.js';

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

/**
 * Text for a terminal: control characters (escape sequences, carriage returns,
 * newlines), format characters (bidi overrides, zero-width) and line separators become a
 * visible `\u{XXXX}`; everything else, non-ASCII names included, stays as it is.
 */
export function forTerminal(text: string): string {
  return escapeMatching(text, UNSAFE_ON_TERMINAL, 1);
}

/**
 * One JSON line for stdout. JSON.stringify escapes only U+0000–U+001F; DEL, C1 controls,
 * format characters and line separators are escaped here too (`\uXXXX` per UTF-16 code
 * unit, so the line parses to the same value) for a person reading it in a terminal.
 */
export function jsonLine(value: unknown): string {
  return `${escapeJsonLine(JSON.stringify(value))}\n`;
}
