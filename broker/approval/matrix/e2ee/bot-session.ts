/**
 * Which Matrix session (device) the bot runs as in an encrypted room. The bot's
 * encryption keys live in memory only (matrix-js-sdk keeps no crypto store in Node), so
 * every start needs a session that has never uploaded keys: with `matrix.bot_password`
 * the bot logs in as a new session each time; without it, the access token's session
 * serves once, and a restart needs a new token.
 */
import { createClient } from 'matrix-js-sdk';
import type { MatrixConfig } from '../../../config.js';
import { MatrixGatewayError } from '../errors.js';
import type { BotIdentity } from './identity-store.js';

export const SESSION_NAME = 'Nextcloud Access Broker';

export interface BotSession {
  readonly accessToken: string;
  readonly deviceId: string;
}

export async function openBotSession(
  cfg: MatrixConfig,
  identity: BotIdentity | undefined,
): Promise<BotSession> {
  const anon = createClient({ baseUrl: cfg.homeserver });
  if (cfg.bot_password !== undefined) {
    const res = await anon.loginRequest({
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user: cfg.bot_user },
      password: cfg.bot_password,
      initial_device_display_name: SESSION_NAME,
    });
    if (res.user_id !== cfg.bot_user) {
      throw new MatrixGatewayError(
        'wrong_user',
        `matrix.bot_password logged in as ${res.user_id}, not matrix.bot_user ${cfg.bot_user}`,
      );
    }
    return { accessToken: res.access_token, deviceId: res.device_id };
  }
  const withToken = createClient({ baseUrl: cfg.homeserver, accessToken: cfg.bot_token });
  const me = await withToken.whoami();
  const deviceId = me.device_id;
  if (deviceId === undefined) {
    throw new MatrixGatewayError(
      'bad_response',
      'the homeserver did not say which session matrix.bot_token belongs to',
    );
  }
  // Security: keys of a session that already ran are gone with that run; uploading new
  // ones for the same session id would clash with the keys others hold for it.
  if (identity?.devices.includes(deviceId) === true) {
    throw new MatrixGatewayError(
      'stale_session',
      `the bot's session ${deviceId} (matrix.bot_token) already ran with encryption, and its keys ended with that run: set matrix.bot_password_env so the bot logs in as a new session at each start, or log the bot in again and put the new access token in matrix.bot_token`,
    );
  }
  return { accessToken: cfg.bot_token, deviceId };
}
