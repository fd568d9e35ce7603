/**
 * Turns the parsed YAML (schema.ts) into a BrokerConfig: resolves secrets from their
 * inline / `_file` / `_env` forms, checks the rules that span keys, resolves paths.
 * Problems are collected so the owner sees all of them at once.
 */
import { resolve as resolvePath } from 'node:path';
import { ASCII_CONTROL } from '../base/text.js';
import { formatDuration } from './duration.js';
import type { ConfigIssue } from './errors.js';
import { showEnvName, showFilePath } from './redact.js';
import type { RawConfig } from './schema.js';
import type {
  BrokerConfig,
  ConfigContext,
  InstanceConfig,
  MatrixConfig,
  PinnedDevice,
} from './types.js';
import { checkServiceUrl, isLoopbackListen } from './urls.js';

export const MIN_TOKEN_LENGTH = 32;
/** The shortest app password or bot token accepted. */
export const MIN_SECRET_LENGTH = 16;
/** `transfer.chunk_size` bounds: 5 MiB (Nextcloud's smallest part) to 4 GiB. */
const CHUNK_SIZE_MIN = 5 * 2 ** 20;
const CHUNK_SIZE_MAX = 4 * 2 ** 30;
/** `audit.anchor_interval` and `reconcile.interval` bounds: 1 minute to 7 days. */
const INTERVAL_MIN = 60_000;
const INTERVAL_MAX = 7 * 86_400_000;
type SecretRule = 'token' | 'header' | 'password' | 'login';

const TOKEN_HINT = 'make one with: openssl rand -hex 32';
/** The next step for a secret shorter than MIN_SECRET_LENGTH, by rule. */
const SHORT_SECRET_FIX: Record<SecretRule, string> = {
  token: TOKEN_HINT,
  header: "give the bot's access token (e.g. syt_…, from its login), not a password or a name",
  password:
    'give a Nextcloud app password (Settings → Security → Devices & sessions → Create new app password), not the login password',
  login: "set a longer password on the bot's Matrix account and give that",
};

class Collector {
  readonly issues: ConfigIssue[] = [];
  readonly warnings: string[] = [];
  issue(key: string, message: string): void {
    this.issues.push({ key, message });
  }
}

function errorCode(e: unknown): string {
  if (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string') {
    return e.code;
  }
  return 'unreadable';
}

/**
 * Security: exactly one source per secret, so it is never ambiguous which value is in
 * force; messages name keys, files and variables, never the secret itself.
 */
function resolveSecret<K extends string>(
  holder: Readonly<Partial<Record<K | `${K}_file` | `${K}_env`, string>>>,
  key: K,
  prefix: string,
  rule: SecretRule,
  ctx: ConfigContext,
  out: Collector,
): string {
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const inline = str(holder[key]);
  const file = str(holder[`${key}_file`]);
  const env = str(holder[`${key}_env`]);
  const full = `${prefix}${key}`;
  const forms = `${full}, ${full}_file (a file holding it) or ${full}_env (an environment variable holding it)`;
  const given = [inline, file, env].filter((v) => v !== undefined).length;
  if (given === 0) {
    out.issue(full, `is required: set ${forms}`);
    return '';
  }
  if (given > 1) {
    out.issue(full, `is given more than one way: keep only one of ${forms}`);
    return '';
  }

  let value: string;
  let source = full;
  if (file !== undefined) {
    source = `${full}_file`;
    const path = resolvePath(ctx.baseDir, file);
    try {
      // A trailing newline is what editors and `echo` leave; it is not part of the secret.
      value = ctx.readFile(path).replace(/[\r\n]+$/, '');
      const mode = ctx.fileMode?.(path);
      // Security: a secret file others can read defeats keeping it out of config.yaml.
      if (mode !== undefined && (mode & 0o077) !== 0 && showFilePath(file)) {
        out.warnings.push(
          `${source}: ${path} is readable by other users (mode ${(mode & 0o777).toString(8).padStart(3, '0')}): run chmod 600 ${path}`,
        );
      }
    } catch (e) {
      const which = showFilePath(file) ? path : `the file named in ${source}`;
      out.issue(
        source,
        `cannot read ${which} (${errorCode(e)}): create it holding the secret, or set ${full} or ${full}_env instead`,
      );
      return '';
    }
  } else if (env !== undefined) {
    source = `${full}_env`;
    const fromEnv = ctx.env[env];
    if (fromEnv === undefined || fromEnv === '') {
      const name = showEnvName(env);
      const fix =
        name === undefined
          ? `the environment variable named in ${source} is not set (is the secret itself written there by mistake?): put the variable's NAME in ${source}`
          : `environment variable ${name} is not set: export ${name}=<the secret> before starting`;
      out.issue(source, `${fix}, or set ${full} or ${full}_file instead`);
      return '';
    }
    value = fromEnv;
  } else {
    value = inline ?? '';
  }

  const from = source === full ? '' : ` (the value from ${source})`;
  if (value === '') {
    out.issue(source, `must not be empty${from}`);
    return '';
  }
  if (ASCII_CONTROL.test(value)) {
    out.issue(source, `must not contain control characters or line breaks${from}`);
    return '';
  }
  if (rule !== 'password' && rule !== 'login' && !/^[\x21-\x7e]+$/.test(value)) {
    // Security: bearer values go into HTTP headers; spaces or non-ASCII would be
    // mangled or rejected differently by each client.
    out.issue(source, `must be printable ASCII without spaces${from}`);
    return '';
  }
  if (rule === 'token' && value.length < MIN_TOKEN_LENGTH) {
    // Security: a short bearer token can be guessed; 32 characters is the floor.
    out.issue(source, `must be at least ${MIN_TOKEN_LENGTH} characters${from}; ${TOKEN_HINT}`);
    return '';
  }
  if ([...value].length < MIN_SECRET_LENGTH) {
    // Security: every configured secret is scrubbed from all output and refused in tool
    // arguments, in any letter case; a 1-character one would redact that letter from
    // every message, and a short one is a guessable credential. Never the value here.
    out.issue(
      source,
      `must be at least ${MIN_SECRET_LENGTH} characters${from}: ${SHORT_SECRET_FIX[rule]}`,
    );
    return '';
  }
  return value;
}

/** A secret's keys in config.yaml: `<key>`, `<key>_file`, `<key>_env` (schema.ts). */
const secretKeys = <K extends string>(key: K): (K | `${K}_file` | `${K}_env`)[] => [
  key,
  `${key}_file`,
  `${key}_env`,
];

/** `holder` without `keys`: what resolving puts in their place is added by the caller. */
function without<T extends object, K extends string>(holder: T, keys: readonly K[]): Omit<T, K> {
  const dropped = new Set<string>(keys);
  return Object.fromEntries(Object.entries(holder).filter(([k]) => !dropped.has(k))) as Omit<T, K>;
}

function checkUrl(key: string, url: string, out: Collector): void {
  const check = checkServiceUrl(url);
  if (!check.ok) out.issue(key, check.message);
  else if (check.warning !== undefined) out.warnings.push(`${key} ${check.warning}`);
}

/** `tokens.metrics`: optional (absent: no /metrics), else a token like the others. */
function resolveMetricsToken(
  raw: RawConfig,
  agent: string,
  transfer: string,
  ctx: ConfigContext,
  out: Collector,
): string | undefined {
  const t = raw.tokens;
  if (t.metrics === undefined && t.metrics_file === undefined && t.metrics_env === undefined) {
    return undefined;
  }
  const metrics = resolveSecret(t, 'metrics', 'tokens.', 'token', ctx, out);
  // Security: a scraper's token must open no MCP surface.
  if (metrics !== '' && (metrics === agent || metrics === transfer)) {
    out.issue('tokens.metrics', `must differ from tokens.agent and tokens.transfer; ${TOKEN_HINT}`);
  }
  return metrics;
}

function resolveMatrix(
  raw: RawConfig,
  ctx: ConfigContext,
  out: Collector,
): MatrixConfig | undefined {
  const m = raw.matrix;
  if (m === undefined) {
    if (raw.approval === 'matrix') {
      out.issue(
        'matrix',
        'is required when approval is matrix: add a matrix section, or set approval: console',
      );
    }
    return undefined;
  }
  // A `matrix:` section kept for later (approval: console) is not used: its URL and
  // token are not checked, so neither start nor doctor warns about what is not in play.
  if (raw.approval !== 'matrix') return undefined;
  checkUrl('matrix.homeserver', m.homeserver, out);
  // Security: the bot's own messages must never count as the owner's decision.
  if (m.approver.toLowerCase() === m.bot_user.toLowerCase()) {
    out.issue(
      'matrix.approver',
      'must be a different Matrix user from matrix.bot_user (the bot must not approve its own requests)',
    );
  }
  return {
    ...without(m, [
      ...secretKeys('bot_token'),
      ...secretKeys('crypto_secret'),
      ...secretKeys('bot_password'),
      'encryption',
      'approver_devices',
    ]),
    bot_token: resolveSecret(m, 'bot_token', 'matrix.', 'header', ctx, out),
    ...resolveMatrixEncryption(m, ctx, out),
  };
}

// Element shows a session key as unpadded base64 of 32 bytes, in groups of 4.
const DEVICE_ID = /^[A-Za-z0-9_\-.=+/]{1,64}$/;
const ED25519 = /^[A-Za-z0-9+/]{43}$/;

/** `"DEVICE_ID ED25519_KEY"`; the key may be written in Element's groups of four. */
export function parsePin(line: string): PinnedDevice | undefined {
  const [deviceId, ...rest] = line.trim().split(/\s+/);
  const ed25519 = rest.join('');
  if (deviceId === undefined || !DEVICE_ID.test(deviceId) || !ED25519.test(ed25519)) {
    return undefined;
  }
  return { deviceId, ed25519 };
}

function resolveMatrixEncryption(
  m: NonNullable<RawConfig['matrix']>,
  ctx: ConfigContext,
  out: Collector,
): Pick<MatrixConfig, 'encryption' | 'approver_devices' | 'crypto_secret' | 'bot_password'> {
  const hasPassword =
    m.bot_password !== undefined ||
    m.bot_password_file !== undefined ||
    m.bot_password_env !== undefined;
  const bot_password = hasPassword
    ? resolveSecret(m, 'bot_password', 'matrix.', 'login', ctx, out)
    : undefined;
  if (m.encryption === 'off') {
    // The clear-text warning is the gateway's (at start), status's and doctor's to give.
    return { encryption: 'off', approver_devices: [], bot_password };
  }
  // Empty is allowed: devices are then paired from the broker's host (`broker pair`), and
  // the broker says at start that none is pinned yet.
  const pins: PinnedDevice[] = [];
  const lines = m.approver_devices ?? [];
  lines.forEach((line, i) => {
    const pin = parsePin(line);
    if (pin === undefined) {
      out.issue(
        `matrix.approver_devices[${i}]`,
        'must be "DEVICE_ID ED25519_KEY": the session ID and session key Element shows (Settings → Sessions), or the line broker doctor prints',
      );
    } else pins.push(pin);
  });
  // Security: the secret encrypts the bot's cross-signing keys at rest; 32 characters
  // is the floor for a key an attacker with the data folder could guess offline.
  const crypto_secret = resolveSecret(m, 'crypto_secret', 'matrix.', 'token', ctx, out);
  return { encryption: 'required', approver_devices: pins, crypto_secret, bot_password };
}

function resolveInstances(
  raw: RawConfig,
  ctx: ConfigContext,
  out: Collector,
): Map<string, InstanceConfig> {
  const instances = new Map<string, InstanceConfig>();
  for (const [name, inst] of Object.entries(raw.instances)) {
    const prefix = `instances.${name}.`;
    checkUrl(`${prefix}url`, inst.url, out);
    instances.set(name, {
      name,
      ...without(inst, secretKeys('app_password')),
      app_password: resolveSecret(inst, 'app_password', prefix, 'password', ctx, out),
    });
  }
  return instances;
}

export function resolveConfig(
  raw: RawConfig,
  ctx: ConfigContext,
): { config: BrokerConfig; issues: ConfigIssue[]; warnings: string[] } {
  const out = new Collector();

  const agent = resolveSecret(raw.tokens, 'agent', 'tokens.', 'token', ctx, out);
  const transfer = resolveSecret(raw.tokens, 'transfer', 'tokens.', 'token', ctx, out);
  // Security: the two surfaces are separate trust levels; one token must not open both.
  if (agent !== '' && agent === transfer) {
    out.issue('tokens.transfer', `must differ from tokens.agent; ${TOKEN_HINT}`);
  }

  const metrics = resolveMetricsToken(raw, agent, transfer, ctx, out);
  const matrix = resolveMatrix(raw, ctx, out);

  const { default_grant, max_grant } = raw.lifecycle;
  if (max_grant < default_grant) {
    out.issue(
      'lifecycle.max_grant',
      `must be at least lifecycle.default_grant (${formatDuration(max_grant)} < ${formatDuration(default_grant)}): raise max_grant or lower default_grant`,
    );
  }

  const { anchor_interval } = raw.audit;
  // Security: a timer above 2^31 ms fires at once in Node, so an interval that long would
  // post the head in a loop; one under a minute floods the owner's room.
  if (anchor_interval < INTERVAL_MIN || anchor_interval > INTERVAL_MAX) {
    out.issue(
      'audit.anchor_interval',
      `must be between ${formatDuration(INTERVAL_MIN)} and ${formatDuration(INTERVAL_MAX)} (got ${formatDuration(anchor_interval)})`,
    );
  }

  const { interval } = raw.reconcile;
  // A timer above 2^31 ms fires at once; a pass more often than a minute only loads Nextcloud.
  if (interval !== 'off' && (interval < INTERVAL_MIN || interval > INTERVAL_MAX)) {
    out.issue(
      'reconcile.interval',
      `must be off, or between ${formatDuration(INTERVAL_MIN)} and ${formatDuration(INTERVAL_MAX)} (got ${formatDuration(interval)})`,
    );
  }

  const { chunk_size, put_limit } = raw.transfer;
  if (put_limit !== undefined && put_limit < 1)
    out.issue('transfer.put_limit', `must be at least 1 byte (got ${put_limit})`);
  // Nextcloud on object storage refuses chunks under 5 MiB but the last, and allows
  // 10000 of them; past 4 GiB a chunk is a whole upload again.
  if (chunk_size !== undefined && (chunk_size < CHUNK_SIZE_MIN || chunk_size > CHUNK_SIZE_MAX)) {
    out.issue(
      'transfer.chunk_size',
      `must be between 5MiB and 4GiB (got ${chunk_size} bytes): Nextcloud refuses smaller chunks on object storage`,
    );
  }

  if (!isLoopbackListen(raw.server.host)) {
    out.warnings.push(
      `server.host ${raw.server.host} accepts connections from other machines; put a TLS reverse proxy in front and list its name in server.allowed_hosts`,
    );
  }

  // What is not resolved here passes as the schema parsed it.
  const config: BrokerConfig = {
    ...raw,
    // `[::1]` is how URLs write it; the socket API wants `::1`.
    server: { ...raw.server, host: raw.server.host.replace(/^\[(.*)\]$/, '$1') },
    tokens: { agent, transfer, ...(metrics === undefined ? {} : { metrics }) },
    matrix,
    data_dir: resolvePath(ctx.baseDir, raw.data_dir),
    instances: resolveInstances(raw, ctx, out),
  };
  return { config, issues: out.issues, warnings: out.warnings };
}
