import { homedir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { usageError } from './errors.js';

/** Where the CLI finds the broker and stages files. */
export interface ClientEnv {
  readonly brokerUrl: URL;
  readonly token: string;
  /** Absolute staging root: $BROKER_STAGE_DIR, else the XDG data folder. */
  readonly stageRoot: string;
  /** Absolute folder of the CLI's own records: $BROKER_STATE_DIR, else `<stageRoot>.state`. */
  readonly stateDir: string;
}

/** `inner` is `outer` or lies below it. */
export const isWithin = (inner: string, outer: string): boolean =>
  inner === outer || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);

export function readClientEnv(env: NodeJS.ProcessEnv): ClientEnv {
  const rawUrl = env.BROKER_URL;
  if (rawUrl === undefined || rawUrl === '') {
    throw usageError(
      'BROKER_URL is not set',
      'export BROKER_URL=http://HOST:8765 (the address `broker serve` listens on)',
    );
  }
  let brokerUrl: URL;
  try {
    brokerUrl = new URL(rawUrl);
  } catch {
    throw usageError(
      `BROKER_URL is not a URL: ${JSON.stringify(rawUrl)}`,
      'set BROKER_URL=http://HOST:8765',
    );
  }
  if (brokerUrl.protocol !== 'http:' && brokerUrl.protocol !== 'https:') {
    throw usageError(
      'BROKER_URL must start with http:// or https://',
      'set BROKER_URL=http://HOST:8765',
    );
  }
  const token = env.BROKER_TRANSFER_TOKEN;
  if (token === undefined || token === '') {
    throw usageError(
      'BROKER_TRANSFER_TOKEN is not set',
      'export BROKER_TRANSFER_TOKEN=<tokens.transfer from the broker config>',
    );
  }
  const stageRoot =
    env.BROKER_STAGE_DIR !== undefined && env.BROKER_STAGE_DIR !== ''
      ? resolve(env.BROKER_STAGE_DIR)
      : join(
          env.XDG_DATA_HOME !== undefined && env.XDG_DATA_HOME !== ''
            ? resolve(env.XDG_DATA_HOME)
            : join(homedir(), '.local', 'share'),
          'broker',
          'stage',
        );
  const stateDir =
    env.BROKER_STATE_DIR !== undefined && env.BROKER_STATE_DIR !== ''
      ? resolve(env.BROKER_STATE_DIR)
      : `${stageRoot}.state`;
  // Security: fetched files land in the staging folder; the records that decide what may
  // be overwritten must never be among them (or hold them).
  if (isWithin(stateDir, stageRoot) || isWithin(stageRoot, stateDir)) {
    throw usageError(
      `the CLI state folder ${stateDir} and the staging folder ${stageRoot} overlap`,
      'set BROKER_STATE_DIR to a folder outside the staging folder (or unset it)',
    );
  }
  return { brokerUrl, token, stageRoot, stateDir };
}
