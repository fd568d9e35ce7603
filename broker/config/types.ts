/**
 * The configuration's types, inferred from its schema (schema.ts, where each key is
 * declared and documented once). What resolve.ts turns into something else has its own
 * type derived here: a secret's three keys become its value, the approver's devices
 * parsed pins, the instances a Map that knows each one's name.
 */
import type { RawConfig } from './schema.js';

/** A secret's keys in config.yaml: `<key>`, `<key>_file`, `<key>_env` (schema.ts). */
type SecretKeys<K extends string> = K | `${K}_file` | `${K}_env`;

/** `T` with the secrets `Required` and `Optional` resolved to their values. */
type WithSecrets<T, Required extends string, Optional extends string = never> = Omit<
  T,
  SecretKeys<Required | Optional>
> & { [K in Required]: string } & { [K in Optional]?: string | undefined };

type RawInstance = RawConfig['instances'][string];
type RawMatrix = NonNullable<RawConfig['matrix']>;

/** One Nextcloud account the broker may use (`instances.<name>` in config.yaml). */
export type InstanceConfig = WithSecrets<RawInstance, 'app_password'> & {
  /** The key under `instances`, `[a-z0-9_-]{1,32}`. */
  name: string;
};

/** One pinned device: `"DEVICE_ID ED25519_KEY"` in config.yaml. */
export interface PinnedDevice {
  readonly deviceId: string;
  /** Unpadded base64, as Element shows the "Session key". */
  readonly ed25519: string;
}

/** `matrix` in config.yaml, its secrets resolved and its devices parsed. */
export type MatrixConfig = Omit<
  WithSecrets<RawMatrix, 'bot_token', 'crypto_secret' | 'bot_password'>,
  'encryption' | 'approver_devices'
> & {
  /** Absent (a configuration built in code, not parsed): `off`. */
  encryption?: RawMatrix['encryption'] | undefined;
  /** The approver's devices whose decisions count (empty or absent when encryption is off). */
  approver_devices?: readonly PinnedDevice[] | undefined;
};

/** The validated configuration; keys keep their snake_case YAML names. Durations are ms. */
export type BrokerConfig = Omit<RawConfig, 'tokens' | 'matrix' | 'instances'> & {
  tokens: WithSecrets<RawConfig['tokens'], 'agent' | 'transfer', 'metrics'>;
  /** Present whenever `approval` is `matrix`; optional for `console`. */
  matrix: MatrixConfig | undefined;
  instances: ReadonlyMap<string, InstanceConfig>;
};

/** What parseConfig needs from the outside world. */
export interface ConfigContext {
  /** The config file's folder: relative `data_dir` and `_file` paths resolve against it. */
  baseDir: string;
  env: NodeJS.ProcessEnv;
  /** Reads a `_file` secret; throws when the file cannot be read. */
  readFile: (path: string) => string;
  /** The permission bits of a `_file` secret, to warn when others can read it (optional). */
  fileMode?: (path: string) => number | undefined;
}

export interface ParsedConfig {
  config: BrokerConfig;
  /** Things that work but deserve the owner's attention (e.g. http on loopback). */
  warnings: string[];
}
