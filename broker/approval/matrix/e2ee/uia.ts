/**
 * User-interactive auth with the bot's password, for the two calls that need it:
 * replacing cross-signing keys and deleting an old session.
 */
import type { AuthDict } from 'matrix-js-sdk';
import { MatrixGatewayError } from '../errors.js';

interface UiaError {
  httpStatus?: unknown;
  data?: { session?: unknown; flows?: unknown };
}

/** Runs `makeRequest` without auth, and once more with the password when asked for it. */
export async function withPassword<T>(
  botUser: string,
  password: string | undefined,
  what: string,
  makeRequest: (auth: AuthDict | null) => Promise<T>,
): Promise<T> {
  try {
    return await makeRequest(null);
  } catch (err) {
    const e = err as UiaError;
    if (e.httpStatus !== 401 || typeof e.data?.session !== 'string') throw err;
    if (password === undefined) {
      throw new MatrixGatewayError(
        'crypto_setup',
        `the homeserver asks for the bot's password to ${what}: set matrix.bot_password_env`,
        { cause: err },
      );
    }
    return makeRequest({
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user: botUser },
      password,
      session: e.data.session,
    });
  }
}
