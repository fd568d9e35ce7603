import { ConfigError } from './errors.js';

/**
 * Durations in config and approval commands: a positive integer and one unit,
 * `s` seconds, `m` minutes, `h` hours, `d` days (`45s`, `30m`, `12h`, `7d`).
 * Anything else (`0h`, `1.5h`, `2 h`, `12`, `1w`, `-3d`) is refused, never guessed.
 */
const UNIT_MS = new Map<string, number>([
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
]);

const DURATION = /^([1-9][0-9]{0,9})([smhd])$/;

/** Milliseconds, or `undefined` when the text is not a duration. */
export function tryParseDuration(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = DURATION.exec(text);
  if (m === null) return undefined;
  const unit = UNIT_MS.get(m[2] ?? '');
  if (unit === undefined) return undefined;
  const ms = Number(m[1]) * unit;
  // Security: an absurd value must not overflow into an imprecise or infinite expiry.
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** `"30m"` → 1 800 000. Throws a ConfigError naming `key` for anything else. */
export function parseDuration(text: string, key = 'duration'): number {
  const ms = tryParseDuration(text);
  if (ms === undefined) {
    throw ConfigError.single(
      'invalid',
      key,
      'must be a duration: a positive whole number followed by s, m, h or d (e.g. 45s, 30m, 12h, 7d)',
    );
  }
  return ms;
}

/** 86 400 000 → `1d`; 5 400 000 → `90m`. The largest unit that divides exactly. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [...UNIT_MS].reverse()) {
    if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
