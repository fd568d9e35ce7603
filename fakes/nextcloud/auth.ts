/**
 * HTTP Basic with the app password, and Nextcloud's brute-force throttle: each
 * failure is slower (scaled by `authDelayScale`), and from the 12th failure on the
 * client IP (all clients here: loopback) gets 429 for every request, valid
 * credentials included, until reset().
 */
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FakeState } from './state.js';

export type AuthResult = { kind: 'ok'; user: string } | { kind: 'none' } | { kind: 'bad' };

/** Seconds Nextcloud waits after failure 1, 2, 3, … (facts). */
const FAILURE_DELAYS_S = [1, 1.2, 1.6, 2.4, 4, 7.4, 13.6, 26];

export const WWW_AUTHENTICATE = 'Basic realm="Nextcloud", charset="UTF-8"';

export function checkBasic(req: IncomingMessage, state: FakeState): AuthResult {
  const header = req.headers.authorization;
  const m = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return { kind: 'none' };
  const decoded = Buffer.from(m[1] ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return { kind: 'bad' };
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return user === state.user && password === state.password
    ? { kind: 'ok', user }
    : { kind: 'bad' };
}

/** Every request is refused with 429 once the failure count reaches the throttle point. */
export function throttled(state: FakeState): boolean {
  return state.authFailures >= state.throttleAtFailure - 1;
}

/** How long the real server waits after the n-th failed login (1-based), scaled. */
export function failureDelayMs(failures: number, scale: number): number {
  const seconds = FAILURE_DELAYS_S[Math.min(failures, FAILURE_DELAYS_S.length) - 1] ?? 26;
  return seconds * 1000 * scale;
}

/** Count a failed login and wait as long as the real server would (scaled). */
export async function recordFailure(state: FakeState): Promise<void> {
  state.authFailures += 1;
  const ms = failureDelayMs(state.authFailures, state.authDelayScale);
  if (ms > 0) await sleep(ms);
}
