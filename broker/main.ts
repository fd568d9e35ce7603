/**
 * The daemon's entry: load the config, assemble the daemon, start. No decisions here
 * (they live in the modules assemble.ts wires); importing this file starts nothing.
 */
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { assemble } from './assemble.js';
import type { Logger } from './base/log.js';
import { loadConfig, type BrokerConfig } from './config.js';

export interface DaemonIo {
  env: NodeJS.ProcessEnv;
  /** Receives log lines (stderr in production). */
  writeLog: (line: string) => void;
  /** The approval console (approval: console). */
  stdin: Readable;
  stdout: Writable;
  /** stdin and stdout are a terminal; if not, the console runs headless (owner socket). */
  interactive?: boolean;
  /** The owner typed `quit` or Ctrl-D on the console: stop as on SIGTERM. */
  onQuit?: (why: string) => void;
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
  const { config, warnings } = loadConfig(configPath, io.env);
  const daemon = await assemble(config, {
    writeLog: io.writeLog,
    configWarnings: warnings,
    ...(io.now === undefined ? {} : { now: io.now }),
    console: {
      input: io.stdin,
      output: io.stdout,
      ...(io.interactive === undefined ? {} : { interactive: io.interactive }),
      ...(io.onQuit === undefined ? {} : { onQuit: io.onQuit }),
    },
    correlationId: randomUUID,
  });
  const { url } = await daemon.start();
  return { url, config, logger: daemon.logger, stop: () => daemon.stop() };
}
