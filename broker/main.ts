/**
 * The daemon's entry: load the config, build the dependencies, start. No decisions here
 * (they live in the modules it wires); importing this file starts nothing.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { createServer, type ApprovalGatewayPort } from './app.js';
import { ConsoleGateway } from './approval/console.js';
import { ApprovalEngine } from './approval/engine.js';
import { AuditLog } from './audit/index.js';
import { configSecrets, loadConfig, type BrokerConfig } from './config.js';
import type { GrantRecord } from './base/domain.js';
import { GrantStore } from './grants/index.js';
import { createLogger, type Logger } from './base/log.js';
import { NextcloudClient } from './nextcloud/index.js';
import { createScrubber } from './base/scrub.js';

export const GRANTS_FILE = 'grants.db';

export interface DaemonIo {
  env: NodeJS.ProcessEnv;
  /** Receives log lines (stderr in production). */
  writeLog: (line: string) => void;
  /** The approval console (approval: console). */
  stdin: Readable;
  stdout: Writable;
  now?: () => number;
}

export interface RunningBroker {
  url: string;
  config: BrokerConfig;
  logger: Logger;
  /** Stop accepting, drain, stop the gateway, audit `stop`, close the audit log and the store. */
  stop(): Promise<void>;
}

export async function startBroker(configPath: string, io: DaemonIo): Promise<RunningBroker> {
  const now = io.now ?? Date.now;
  const { config, warnings } = loadConfig(configPath, io.env);
  const scrub = createScrubber(
    configSecrets(config),
    [...config.instances.values()].map((i) => [i.username, i.app_password] as const),
  );
  const logger = createLogger({ level: config.logging.level, scrub, write: io.writeLog, now });
  for (const warning of warnings) logger.warn('config', { warning });

  const audit = await AuditLog.open(config.data_dir, { now, logger });
  let store: GrantStore | undefined;
  const clients = new Map<string, NextcloudClient>();
  try {
    store = GrantStore.open(join(config.data_dir, GRANTS_FILE), {
      now,
      pendingTimeoutMs: config.lifecycle.pending_timeout,
    });
    for (const [name, instance] of config.instances) {
      clients.set(name, new NextcloudClient(instance, { logger, now, timeoutMs: 30_000 }));
    }
    // The engine's revoke hook needs the server, which needs the gateway, which needs the engine.
    let onRevoked: (grants: GrantRecord[]) => Promise<void> = async () => undefined;
    const engine = new ApprovalEngine({
      config,
      store,
      audit,
      now,
      logger,
      onRevoked: (grants) => onRevoked(grants),
    });
    const gateway: ApprovalGatewayPort =
      config.approval === 'console'
        ? new ConsoleGateway({
            input: io.stdin,
            output: io.stdout,
            engine,
            now,
            lifecycle: config.lifecycle,
            logger,
          })
        : // Loaded only when used: matrix-js-sdk is a third of the idle memory.
          new (await import('./approval/matrix/gateway.js')).MatrixGateway({
            config,
            engine,
            logger,
            now,
            audit,
          });
    const server = createServer({
      config,
      grants: store,
      audit,
      gateway,
      clients,
      logger,
      scrub,
      now,
      correlationId: randomUUID,
    });
    onRevoked = (grants) => server.grantsEnded(grants);
    let url: string;
    try {
      ({ url } = await server.start());
    } catch (error) {
      await server.close();
      throw error;
    }
    const openStore = store;
    return {
      url,
      config,
      logger,
      async stop() {
        await server.close();
        for (const client of clients.values()) client.close();
        try {
          await audit.append('stop', {});
        } catch (error) {
          logger.error('could not audit the stop', { error: String(error) });
        }
        await audit.close();
        openStore.close();
      },
    };
  } catch (error) {
    for (const client of clients.values()) client.close();
    store?.close();
    await audit.close();
    throw error;
  }
}
