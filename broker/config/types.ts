import type { LogLevel } from '../base/log.js';

/** One Nextcloud account the broker may use (`instances.<name>` in config.yaml). */
export interface InstanceConfig {
  /** The key under `instances`, `[a-z0-9_-]{1,32}`. */
  name: string;
  /** https (http only on a loopback host), no credentials, query or fragment. */
  url: string;
  username: string;
  /** Secret. */
  app_password: string;
  /** Whether the agent may list folders it has no grant for (names only). Default false. */
  discovery: boolean;
}

export interface MatrixConfig {
  homeserver: string;
  bot_user: string;
  /** Secret. */
  bot_token: string;
  room_id: string;
  /** The only Matrix user whose decisions count. */
  approver: string;
  /** `required`: an encrypted room, decisions only from pinned devices. Absent: `off`. */
  encryption?: 'required' | 'off' | undefined;
  /** The approver's devices whose decisions count (empty or absent when encryption is off). */
  approver_devices?: readonly PinnedDevice[] | undefined;
  /** Secret (with encryption required): encrypts the bot's identity at rest. */
  crypto_secret?: string | undefined;
  /** Secret, optional: lets the bot log in as a new session and delete its old ones. */
  bot_password?: string | undefined;
}

/** One pinned device: `"DEVICE_ID ED25519_KEY"` in config.yaml. */
export interface PinnedDevice {
  readonly deviceId: string;
  /** Unpadded base64, as Element shows the "Session key". */
  readonly ed25519: string;
}

/** The validated configuration; keys keep their snake_case YAML names. Durations are ms. */
export interface BrokerConfig {
  server: {
    host: string;
    port: number;
    allowed_hosts: string[];
    max_body_bytes: number;
    request_timeout_ms: number;
  };
  /** Secrets, each at least 32 characters, different from each other. */
  tokens: {
    agent: string;
    transfer: string;
    /** Opens `GET /metrics`; absent, the endpoint is off (404). */
    metrics?: string;
  };
  /** Present whenever `approval` is `matrix`; optional for `console`. */
  matrix: MatrixConfig | undefined;
  approval: 'matrix' | 'console';
  lifecycle: {
    pending_timeout: number;
    default_grant: number;
    max_grant: number;
    /** The most requests that may wait for the owner at once (all instances). */
    max_pending: number;
  };
  /** How often, at most, the audit head goes unposted to the approval room while records are added. */
  audit: { anchor_interval: number };
  /**
   * How often the daemon compares Nextcloud's Activity of each account with the audit
   * log (ms), or `off`.
   */
  reconcile: { interval: number | 'off' };
  /**
   * `chunk_size` in bytes: the chunks of a chunked upload (replacements). Unset: the
   * server's announced largest chunk, else 16 MiB.
   */
  transfer: {
    chunk_size?: number;
    /** The largest new file sent as one PUT (a proxy's body limit); above it, chunks. */
    put_limit?: number;
  };
  /** Absolute; a relative path in the file resolves against the config file's folder. */
  data_dir: string;
  logging: { level: LogLevel };
  instances: ReadonlyMap<string, InstanceConfig>;
}

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
