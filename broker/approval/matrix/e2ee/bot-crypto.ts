/**
 * The bot's end-to-end encryption, for `matrix.encryption: required`, in the order the
 * connection needs it: a fresh session before the client exists, Rust crypto before the
 * first sync (room keys only to verified devices), and after it the bot's stored
 * identity and the approver's pinned devices.
 */
import type { MatrixClient, MatrixEvent } from 'matrix-js-sdk';
import type { Logger } from '../../../base/log.js';
import type { MatrixConfig } from '../../../config.js';
import { errorSummary } from '../client.js';
import { MatrixGatewayError } from '../errors.js';
import { openBotSession, type BotSession } from './bot-session.js';
import { deleteSupersededSessions, establishIdentity } from './identity.js';
import { loadIdentity, type BotIdentity } from './identity-store.js';
import { configPins, PinnedDeviceTrust, type PinSource } from './pins.js';
import { pinnedSender, type SenderVerdict } from './sender-device.js';

/** A failed login or whoami: refused credentials stop the start; the rest is retried. */
function sessionError(err: unknown, cfg: MatrixConfig): MatrixGatewayError {
  if (err instanceof MatrixGatewayError) return err;
  const status = (err as { httpStatus?: unknown } | null)?.httpStatus;
  if (status === 401 || status === 403) {
    const key = cfg.bot_password === undefined ? 'matrix.bot_token' : 'matrix.bot_password';
    return new MatrixGatewayError(
      'unauthorized',
      `the homeserver refused ${key} (HTTP ${status}); check it is ${cfg.bot_user}'s`,
      { cause: err },
    );
  }
  return new MatrixGatewayError(
    'unreachable',
    `cannot open a session for the bot on ${cfg.homeserver} (${errorSummary(err)}); check matrix.homeserver and that the server is up`,
    { cause: err },
  );
}

export class BotCrypto {
  #trust: PinnedDeviceTrust | undefined;
  #client: MatrixClient | undefined;

  readonly #cfg: MatrixConfig;
  readonly #dataDir: string;
  readonly #secret: string;
  #stored: BotIdentity | undefined;
  readonly #logger: Logger;
  /** The approver's pinned devices, read afresh at every check. */
  readonly #pins: PinSource;

  private constructor(
    cfg: MatrixConfig,
    dataDir: string,
    secret: string,
    stored: BotIdentity | undefined,
    readonly session: BotSession,
    logger: Logger,
  ) {
    this.#cfg = cfg;
    this.#dataDir = dataDir;
    this.#secret = secret;
    this.#stored = stored;
    this.#logger = logger;
    this.#pins = configPins(cfg);
  }

  static async open(
    cfg: MatrixConfig,
    dataDir: string | undefined,
    logger: Logger,
  ): Promise<BotCrypto> {
    const secret = cfg.crypto_secret;
    if (dataDir === undefined || secret === undefined || secret === '') {
      throw new MatrixGatewayError(
        'crypto_setup',
        'matrix.encryption is required but the bot has no data folder or matrix.crypto_secret to keep its identity in',
      );
    }
    const stored = loadIdentity(dataDir, secret);
    let session: BotSession;
    try {
      session = await openBotSession(cfg, stored);
    } catch (err) {
      throw sessionError(err, cfg);
    }
    return new BotCrypto(cfg, dataDir, secret, stored, session, logger);
  }

  /** Before startClient: Rust crypto in memory, room keys only for verified devices. */
  async init(client: MatrixClient): Promise<void> {
    this.#client = client;
    await client.initRustCrypto({ useIndexedDB: false });
    const crypto = client.getCrypto();
    if (crypto === undefined) throw new MatrixGatewayError('crypto_setup', 'crypto did not start');
    // Security: room keys go only to devices the bot verified, which are exactly the
    // pinned ones (pins.ts); every other session, the approver's own included, gets a
    // withheld notice instead of the key and cannot read a request.
    crypto.globalBlacklistUnverifiedDevices = true;
  }

  /** After the first sync: the identity, old sessions, the pinned devices. */
  async afterSync(): Promise<void> {
    const client = this.#client;
    if (client === undefined) throw new MatrixGatewayError('crypto_setup', 'init() first');
    const deps = {
      client,
      cfg: this.#cfg,
      dataDir: this.#dataDir,
      secret: this.#secret,
      deviceId: this.session.deviceId,
      logger: this.#logger,
    };
    const identity = await establishIdentity(deps, this.#stored);
    this.#stored = await deleteSupersededSessions(deps, identity);
    this.#trust = new PinnedDeviceTrust(client, this.#cfg.approver, this.#pins, this.#logger);
    await this.#trust.start();
  }

  /** Decrypts `event` when it is encrypted and not yet decrypted. */
  async decrypt(event: MatrixEvent): Promise<void> {
    await this.#client?.decryptEventIfNeeded(event);
  }

  /** Whether `event` came, encrypted, from one of the approver's pinned devices. */
  async sender(event: MatrixEvent): Promise<SenderVerdict> {
    const crypto = this.#client?.getCrypto();
    if (crypto === undefined) return { ok: false, reason: 'undecryptable' };
    await this.#client?.decryptEventIfNeeded(event);
    return pinnedSender(crypto, event, this.#cfg.approver, this.#pins());
  }

  stop(): void {
    this.#trust?.stop();
  }
}
