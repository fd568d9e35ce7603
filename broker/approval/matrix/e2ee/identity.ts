/**
 * One cryptographic identity for the bot across restarts: on the first start the bot
 * creates its cross-signing keys and stores them (encrypted, identity-store.ts); on
 * every later start it imports them into its new session and signs that session with
 * them, so the approver's clients keep seeing the same identity. Sessions it has left
 * behind are deleted when the bot's password is configured, and listed by
 * `broker doctor` otherwise.
 */
import type { MatrixClient } from 'matrix-js-sdk';
import type { Logger } from '../../../base/log.js';
import type { MatrixConfig } from '../../../config.js';
import { errorSummary } from '../client.js';
import { MatrixGatewayError } from '../errors.js';
import { saveIdentity, type BotIdentity } from './identity-store.js';
import { withPassword } from './uia.js';
import type { JsonObject } from '../../../base/protocol.js';

/** Tries of importSecretsBundle: it fails until the bot's own keys have been downloaded. */
const IMPORT_TRIES = 10;
const IMPORT_PAUSE_MS = 100;

export interface IdentityDeps {
  readonly client: MatrixClient;
  readonly cfg: MatrixConfig;
  readonly dataDir: string;
  readonly secret: string;
  readonly deviceId: string;
  readonly logger: Logger;
}

function cryptoOf(client: MatrixClient): NonNullable<ReturnType<MatrixClient['getCrypto']>> {
  const crypto = client.getCrypto();
  if (crypto === undefined) throw new MatrixGatewayError('crypto_setup', 'crypto is not running');
  return crypto;
}

/** Imports or creates the identity, signs this session, records it; returns the record. */
export async function establishIdentity(
  deps: IdentityDeps,
  stored: BotIdentity | undefined,
): Promise<BotIdentity> {
  const { client, cfg, deviceId } = deps;
  const crypto = cryptoOf(client);
  let secrets: JsonObject;
  if (stored === undefined) {
    await crypto.bootstrapCrossSigning({
      setupNewCrossSigning: true,
      authUploadDeviceSigningKeys: (makeRequest) =>
        withPassword(cfg.bot_user, cfg.bot_password, 'set up its cross-signing keys', (auth) =>
          makeRequest(auth).then(() => undefined),
        ),
    });
    // Right after the first bootstrap: a later bootstrap may replace the keys.
    const bundle = await crypto.exportSecretsBundle?.();
    if (bundle === undefined) {
      throw new MatrixGatewayError('crypto_setup', 'this matrix-js-sdk cannot export secrets');
    }
    secrets = bundle as unknown as JsonObject;
  } else {
    secrets = stored.secrets;
    await importWithRetry(client, secrets);
    await crypto.crossSignDevice(deviceId);
  }
  const identity: BotIdentity = {
    bot_user: cfg.bot_user,
    secrets,
    devices: [...(stored?.devices ?? []).filter((d) => d !== deviceId), deviceId],
  };
  saveIdentity(deps.dataDir, deps.secret, identity);
  return identity;
}

async function importWithRetry(client: MatrixClient, secrets: JsonObject): Promise<void> {
  const crypto = cryptoOf(client);
  const userId = client.getSafeUserId();
  let last: unknown;
  for (let i = 0; i < IMPORT_TRIES; i += 1) {
    await crypto.getUserDeviceInfo([userId], true);
    try {
      await crypto.importSecretsBundle?.(secrets as never);
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, IMPORT_PAUSE_MS));
    }
  }
  throw new MatrixGatewayError(
    'crypto_setup',
    `cannot load the bot's stored identity into its new session (${errorSummary(last)}): if the bot's cross-signing keys were reset elsewhere, move the identity file out of the data folder to start a new identity`,
    { cause: last },
  );
}

/**
 * Deletes the sessions the bot ran as before (their keys are gone). Needs the password;
 * without it they stay and `broker doctor` lists them. Returns the updated record.
 */
export async function deleteSupersededSessions(
  deps: IdentityDeps,
  identity: BotIdentity,
): Promise<BotIdentity> {
  const { client, cfg, deviceId, logger } = deps;
  const old = identity.devices.filter((d) => d !== deviceId);
  if (old.length === 0 || cfg.bot_password === undefined) return identity;
  const gone: string[] = [];
  for (const id of old) {
    try {
      await withPassword(cfg.bot_user, cfg.bot_password, 'delete its old session', (auth) =>
        client.deleteDevice(id, auth ?? undefined),
      );
      gone.push(id);
    } catch (err) {
      const status = (err as { httpStatus?: unknown }).httpStatus;
      if (status === 404) gone.push(id);
      else
        logger.warn('could not delete an old session of the bot', {
          device: id,
          error: errorSummary(err),
        });
    }
  }
  const updated = { ...identity, devices: identity.devices.filter((d) => !gone.includes(d)) };
  saveIdentity(deps.dataDir, deps.secret, updated);
  if (gone.length > 0) logger.info('deleted old sessions of the bot', { devices: gone });
  return updated;
}
