/**
 * The daemon's parts that hold something open (assemble.ts builds them in order): the
 * scrubbing logger, the grant store, the Nextcloud clients, and what closes them again.
 */
import { join } from 'node:path';
import type { AuditLog } from '../audit/index.js';
import type { Clock } from '../base/domain.js';
import { errorDetail } from '../base/errors.js';
import { createLogger, type Logger } from '../base/log.js';
import type { BrokerConfig } from '../config.js';
import { GRANTS_FILE } from '../data-folder.js';
import { GrantStore } from '../grants/index.js';
import type { NextcloudAnswer } from '../nextcloud/client.js';
import { NextcloudClient, type NextcloudClientDeps } from '../nextcloud/index.js';

/**
 * The daemon's logger, scrubbing every line; a line waits for the approval console to
 * clear its prompt once the console exists (`around`). The config's warnings go first.
 */
export function daemonLogger(
  config: BrokerConfig,
  options: { writeLog: (line: string) => void; configWarnings?: readonly string[] | undefined },
  scrub: (text: string) => string,
  now: Clock,
): { logger: Logger; around: (wrap: (write: () => void) => void) => void } {
  let aroundLog = (write: () => void): void => write();
  const writeLog = (line: string): void => aroundLog(() => options.writeLog(line));
  const logger = createLogger({ level: config.logging.level, scrub, write: writeLog, now });
  for (const warning of options.configWarnings ?? []) logger.warn('config', { warning });
  return { logger, around: (wrap) => (aroundLog = wrap) };
}

/** What is open and must be closed again: the audit log, the store, the clients. */
export class OpenParts {
  readonly #audit: AuditLog;
  readonly #logger: Logger;
  #store: GrantStore | undefined;
  /** The Nextcloud clients, filled as each is made (nextcloudClients). */
  readonly clients = new Map<string, NextcloudClient>();

  constructor(audit: AuditLog, logger: Logger) {
    this.#audit = audit;
    this.#logger = logger;
  }

  store(store: GrantStore): GrantStore {
    this.#store = store;
    return store;
  }

  async close(): Promise<void> {
    for (const client of this.clients.values()) client.close();
    try {
      await this.#audit.close();
    } catch (error) {
      this.#logger.warn('audit log close failed', { error: errorDetail(error) });
    }
    this.#store?.close();
  }
}

/** The grant database: data_dir/grants.db unless the options name another. */
export function openGrantStore(
  config: BrokerConfig,
  file: string | undefined,
  now: Clock,
): GrantStore {
  return GrantStore.open(file ?? join(config.data_dir, GRANTS_FILE), {
    now,
    pendingTimeoutMs: config.lifecycle.pending_timeout,
  });
}

/**
 * One Nextcloud client per configured instance; an answer outside every operation's
 * recording goes to `onAnswer` with the instance's name.
 */
export function nextcloudClients(
  config: BrokerConfig,
  overrides: Partial<NextcloudClientDeps> | undefined,
  deps: Pick<NextcloudClientDeps, 'logger' | 'metrics' | 'now'> & {
    onAnswer: (instance: string, answer: NextcloudAnswer) => void;
  },
  into: Map<string, NextcloudClient>,
): ReadonlyMap<string, NextcloudClient> {
  const { chunk_size, put_limit } = config.transfer;
  const { onAnswer, ...shared } = deps;
  const clientDeps: NextcloudClientDeps = {
    ...shared,
    timeoutMs: 30_000,
    ...(chunk_size === undefined ? {} : { chunkSize: chunk_size }),
    ...(put_limit === undefined ? {} : { putLimit: put_limit }),
    ...overrides,
  };
  // Each kept as it is made, so a failure half-way still closes those made before.
  for (const [name, instance] of config.instances)
    into.set(
      name,
      new NextcloudClient(instance, {
        onAnswer: (answer) => onAnswer(name, answer),
        ...clientDeps,
      }),
    );
  return into;
}
