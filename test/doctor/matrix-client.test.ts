/**
 * The doctor's fetch-based Matrix client gives the gateway's preflight the same verdicts
 * as matrix-js-sdk (which the gateway uses), on the fake homeserver.
 */
import { createClient, MatrixScheduler } from 'matrix-js-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preflight, type PreflightClient } from '../../broker/approval/matrix/preflight.js';
import { toSdkLogger } from '../../broker/approval/matrix/sdk-log.js';
import type { MatrixConfig } from '../../broker/config.js';
import { fetchPreflightClient } from '../../broker/doctor/matrix-client.js';
import { memoryLogger } from '../../broker/base/log.js';
import { startFakeHomeserver, type FakeHomeserver, type RoomSpec } from '../../fakes/homeserver.js';

const BOT = '@bot:hs.test';
const OWNER = '@owner:hs.test';
const BOT_TOKEN = 'bot-token-0123456789abcdef0123456789';
let hs: FakeHomeserver;
let n = 0;

beforeAll(async () => {
  hs = await startFakeHomeserver({
    users: { [BOT]: BOT_TOKEN, [OWNER]: 'owner-token-0123456789' },
  });
});
afterAll(async () => {
  await hs.close();
});

function cfg(roomId: string, token = BOT_TOKEN): MatrixConfig {
  return { homeserver: hs.url, bot_user: BOT, bot_token: token, room_id: roomId, approver: OWNER };
}

function sdk(c: MatrixConfig): PreflightClient {
  return createClient({
    baseUrl: c.homeserver,
    accessToken: c.bot_token,
    userId: c.bot_user,
    scheduler: new MatrixScheduler(() => -1),
    logger: toSdkLogger(memoryLogger()),
  });
}

async function verdict(client: PreflightClient, c: MatrixConfig): Promise<string> {
  try {
    const { others } = await preflight(client, c);
    return `ok ${others.join(',')}`;
  } catch (error) {
    return `${(error as { code?: string }).code ?? 'unknown'}: ${(error as Error).message}`;
  }
}

const cases: [string, Partial<RoomSpec> | null, string?][] = [
  ['a good room', {}],
  ['another member', { members: [OWNER, BOT, '@eve:hs.test'] }],
  ['bot only invited', { members: [OWNER], invited: [BOT] }],
  ['approver missing', { members: [BOT] }],
  ['encrypted', { encrypted: true }],
  ['public', { joinRule: 'public' }],
  ['knock', { joinRule: 'knock' }],
  ['no such room', null],
  ['wrong token', {}, 'not-a-token-0123456789abcdef'],
];

describe('fetch client vs matrix-js-sdk under preflight', () => {
  it.each(cases)('%s', async (_name, spec, token) => {
    n += 1;
    const roomId = `!r${n}:hs.test`;
    if (spec !== null) hs.createRoom({ id: roomId, members: [OWNER, BOT], ...spec });
    const c = cfg(roomId, token);
    const expected = await verdict(sdk(c), c);
    expect(await verdict(fetchPreflightClient(c, 2_000), c)).toBe(expected);
  });

  it('a homeserver answering 502: unreachable, like the SDK', async () => {
    n += 1;
    const roomId = `!r${n}:hs.test`;
    hs.createRoom({ id: roomId, members: [OWNER, BOT] });
    const c = cfg(roomId);
    await hs.outage(true, '502');
    try {
      const expected = await verdict(sdk(c), c);
      expect(expected).toMatch(/^unreachable/);
      // Same verdict; the fetch client names the status where the SDK says ConnectionError.
      expect(await verdict(fetchPreflightClient(c, 2_000), c)).toMatch(
        /^unreachable: cannot reach the Matrix homeserver .* \(HTTP 502\)/,
      );
    } finally {
      await hs.outage(false);
    }
  });
});
