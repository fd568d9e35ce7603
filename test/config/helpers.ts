import { stringify } from 'yaml';
import {
  ConfigError,
  parseConfig,
  type ConfigContext,
  type ParsedConfig,
} from '../../broker/config.js';

export const AGENT = 'agent-token-0123456789abcdef0123456789abcdef';
export const TRANSFER = 'transfer-token-0123456789abcdef0123456789ab';
export const BOT = 'syt_bot_token_value_123';
export const APP = 'Abcde-Fghij-Klmno-Pqrst-Uvwxy';

/** A complete valid configuration as a plain object, to be modified per test. */
export type Raw = Record<string, unknown>;

export function validRaw(): Raw {
  return {
    tokens: { agent: AGENT, transfer: TRANSFER },
    matrix: {
      homeserver: 'https://matrix.example.org',
      bot_user: '@broker:example.org',
      bot_token: BOT,
      room_id: '!room:example.org',
      approver: '@owner:example.org',
    },
    instances: {
      personal: { url: 'https://cloud.example.org', username: 'alice', app_password: APP },
    },
  };
}

export const ctx = (over: Partial<ConfigContext> = {}): ConfigContext => ({
  baseDir: '/srv/broker',
  env: {},
  readFile: (p) => {
    throw Object.assign(new Error(`ENOENT: no such file ${p}`), { code: 'ENOENT' });
  },
  ...over,
});

export function parseRaw(raw: unknown, c: ConfigContext = ctx()): ParsedConfig {
  return parseConfig(typeof raw === 'string' ? raw : stringify(raw), c);
}

/** Parses and returns the ConfigError; fails the test when parsing succeeds. */
export function configError(raw: unknown, c: ConfigContext = ctx()): ConfigError {
  try {
    parseRaw(raw, c);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError, but the config was accepted');
}

/** Deep-sets `path` (dotted) in a fresh valid config; `undefined` deletes the key. */
export function withValue(path: string, value: unknown, raw: Raw = validRaw()): Raw {
  const parts = path.split('.');
  let obj: Raw = raw;
  for (const p of parts.slice(0, -1)) {
    obj[p] ??= {};
    obj = obj[p] as Raw;
  }
  const last = parts[parts.length - 1] as string;
  if (value === undefined) delete obj[last];
  else obj[last] = value;
  return raw;
}
