/**
 * The shape of config.yaml (docs/contracts.md §7), before secrets are resolved and cross-key
 * rules are checked (see resolve.ts): each key declared and documented once, here; the
 * configuration's types are inferred from it (types.ts). Every object is strict: an unknown key is an
 * error naming the key, because a misspelt option silently falling back to its
 * default is how a safety setting gets lost.
 */
import { z } from 'zod';
import { INSTANCE_NAME } from '../base/protocol.js';
import { FREE_OF_ASCII_CONTROL } from '../base/text.js';
import { tryParseDuration } from './duration.js';
import { RetentionSchema } from './retention.js';

/** A strict object: unknown keys are refused (parse.ts names each and suggests a fix). */
function strict<T extends z.ZodRawShape>(shape: T) {
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== 'invalid_type') return undefined;
      return issue.input === undefined
        ? 'is required: add this section (see config.yaml.example)'
        : 'must be a mapping of keys (key: value)';
    },
  });
}

const text = (what: string) =>
  z
    .string({ error: `must be a text (${what})` })
    .min(1, { error: `must not be empty (${what})` })
    // Security: control characters in names and paths end up in URLs, headers and logs.
    .regex(FREE_OF_ASCII_CONTROL, { error: 'must not contain control characters' });

const duration = (example: string) =>
  z
    .string({ error: `must be a duration like ${example} (s, m, h or d; quote nothing)` })
    .transform((value, ctx) => {
      const ms = tryParseDuration(value);
      if (ms === undefined) {
        ctx.issues.push({
          code: 'custom',
          input: value,
          message: `must be a duration: a positive whole number followed by s, m, h or d (e.g. ${example})`,
        });
        return z.NEVER;
      }
      return ms;
    });

/** The three ways to give a secret; resolve.ts enforces exactly one. */
const secretKeys = <K extends string>(key: K) =>
  ({
    [key]: z.string({ error: 'must be a text; quote it if it looks like a number' }).optional(),
    [`${key}_file`]: text('a file path').optional(),
    [`${key}_env`]: z
      .string({ error: 'must be an environment variable name' })
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
        error: 'must be an environment variable name (letters, digits, underscore)',
      })
      .optional(),
  }) as Record<K | `${K}_file` | `${K}_env`, z.ZodOptional<z.ZodString>>;

// Matrix identifiers (spec "Identifier grammar"): a sigil, an opaque part, ':' and the
// server name (a host name, IPv4 or [IPv6], optional port).
const SERVER_NAME = String.raw`(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?`;
const USER_ID = new RegExp(String.raw`^@[a-z0-9._=\-/+]+:${SERVER_NAME}$`);
// Room version 12 room ids carry no server name: `!` and a 43-character base64url hash.
const ROOM_ID = new RegExp(String.raw`^!(?:[^\s:]+:${SERVER_NAME}|[A-Za-z0-9_-]{43})$`);

const UserIdSchema = z
  .string({ error: 'must be a Matrix user ID like "@name:example.org" (quote it)' })
  .regex(USER_ID, { error: 'must be a Matrix user ID like "@name:example.org"' });

export const ServerSchema = strict({
  host: text('an address to listen on, e.g. 127.0.0.1')
    .regex(/^[A-Za-z0-9.:[\]-]+$/, {
      error: 'must be an IP address or host name, no scheme or port',
    })
    .default('127.0.0.1'),
  port: z
    .number({ error: 'must be a port number 0-65535 (0 picks a free port)' })
    .int({ error: 'must be a whole number' })
    .min(0, { error: 'must be 0-65535' })
    .max(65535, { error: 'must be 0-65535' })
    .default(8765),
  allowed_hosts: z
    .array(
      text('a host name the clients use, e.g. localhost').regex(/^[A-Za-z0-9.:[\]-]+$/, {
        error: 'must be a host name or address (optionally with :port), no scheme or path',
      }),
      { error: 'must be a list of host names, e.g. [localhost, 127.0.0.1]' },
    )
    .min(1, { error: 'must list at least one host name, e.g. [localhost]' })
    .default(['localhost', '127.0.0.1', '[::1]']),
  max_body_bytes: z
    .number({ error: 'must be a number of bytes' })
    .int({ error: 'must be a whole number of bytes' })
    .positive({ error: 'must be a positive number of bytes' })
    .default(1024 * 1024),
  request_timeout_ms: z
    .number({ error: 'must be a number of milliseconds' })
    .int({ error: 'must be a whole number of milliseconds' })
    .positive({ error: 'must be a positive number of milliseconds' })
    .default(30_000),
});

/** Secrets, each at least 32 characters, different from each other. */
export const TokensSchema = strict({
  ...secretKeys('agent'),
  ...secretKeys('transfer'),
  // Optional: opens GET /metrics; without it the endpoint is off (404; resolve.ts).
  ...secretKeys('metrics'),
});

export const MatrixSchema = strict({
  homeserver: text('the homeserver URL, e.g. https://matrix.example.org'),
  bot_user: UserIdSchema,
  ...secretKeys('bot_token'),
  room_id: z
    .string({ error: 'must be a Matrix room ID like "!abc:example.org" (quote it)' })
    .regex(ROOM_ID, { error: 'must be a Matrix room ID like "!abc:example.org"' }),
  // The only Matrix user whose decisions count.
  approver: UserIdSchema,
  // §11.1: absent means `off` (clear text), with a warning at start, in status and doctor.
  encryption: z.enum(['required', 'off'], { error: 'must be required or off' }).default('off'),
  // The approver's devices whose decisions count, as "DEVICE_ID ED25519_KEY" (required
  // with encryption: required; resolve.ts parses them into pins).
  approver_devices: z
    .array(text('"DEVICE_ID ED25519_KEY", e.g. "PHONEDEVICE 3sbpG34K…"'), {
      error: 'must be a list of "DEVICE_ID ED25519_KEY" texts (see broker doctor)',
    })
    .optional(),
  // With encryption required: encrypts the bot's identity at rest.
  ...secretKeys('crypto_secret'),
  // Optional: lets the bot log in as a new session and delete its old ones.
  ...secretKeys('bot_password'),
});

export const LifecycleSchema = strict({
  pending_timeout: duration('12h').default(12 * 3_600_000),
  default_grant: duration('24h').default(24 * 3_600_000),
  max_grant: duration('7d').default(7 * 86_400_000),
  // Security: an agent cannot flood the owner; beyond this many waiting requests a new one
  // is refused until the owner has decided some.
  max_pending: z
    .number({ error: 'must be a whole number of requests, e.g. 10' })
    .int({ error: 'must be a whole number of requests, e.g. 10' })
    .min(1, { error: 'must be at least 1 (0 would refuse every request)' })
    .max(1000, { error: 'must be at most 1000' })
    .default(10),
});

export const AuditSchema = strict({
  // How often, at most, the audit head goes unposted to the approval room while records are added.
  anchor_interval: duration('1h').default(3_600_000),
});

export const ReconcileSchema = strict({
  // `off`: the daemon does not reconcile by itself (`broker reconcile` still does).
  interval: z
    .union([z.literal('off'), duration('10m')], {
      error: 'must be a duration like 10m (s, m, h or d), or off',
    })
    .default(600_000),
});

const BYTE_UNITS: Record<string, number> = { '': 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 };

/** A size like `16MiB` (KiB, MiB, GiB) or a whole number of bytes. */
const byteSize = (example: string) =>
  z
    .union([z.number(), z.string()], {
      error: `must be a size like ${example} (KiB, MiB or GiB) or a number of bytes`,
    })
    .transform((value, ctx) => {
      const m = /^([0-9]{1,12})\s?(KiB|MiB|GiB)?$/.exec(String(value));
      const bytes = m === null ? NaN : Number(m[1]) * (BYTE_UNITS[m[2] ?? ''] ?? NaN);
      if (!Number.isSafeInteger(bytes)) {
        ctx.issues.push({
          code: 'custom',
          input: value,
          message: `must be a size: a whole number followed by KiB, MiB or GiB (e.g. ${example})`,
        });
        return z.NEVER;
      }
      return bytes;
    });

export const TransferSchema = strict({
  // In bytes: the chunks of a chunked upload (replacements). Unset: the server's announced
  // largest chunk (its capability), else DEFAULT_CHUNK_SIZE (16 MiB).
  chunk_size: byteSize('16MiB').optional(),
  // The largest new file sent as one PUT (a proxy's body limit); above it, chunks. Unset: a
  // new file of any size is one PUT (a 413 to its head still falls back to chunks).
  put_limit: byteSize('100MiB').optional(),
});

export const LoggingSchema = strict({
  level: z
    .enum(['debug', 'info', 'warn', 'error'], { error: 'must be one of debug, info, warn, error' })
    .default('info'),
});

export const InstanceSchema = strict({
  // https (http only on a loopback host), no credentials, query or fragment (resolve.ts).
  url: text('the Nextcloud address, e.g. https://cloud.example.org'),
  username: text('the Nextcloud user name').regex(/^[^/\\]+$/, {
    error: 'must be a Nextcloud user name without slashes',
  }),
  ...secretKeys('app_password'),
  // Whether the agent may list folders it has no grant for (names only).
  discovery: z.boolean({ error: 'must be true or false' }).default(false),
  // What the server's config.php sets (the broker cannot read it): see retention.ts.
  retention: RetentionSchema.optional(),
});

export const RawConfigSchema = strict({
  server: ServerSchema.prefault({}),
  tokens: TokensSchema,
  matrix: MatrixSchema.optional(),
  approval: z.enum(['matrix', 'console'], { error: 'must be matrix or console' }).default('matrix'),
  lifecycle: LifecycleSchema.prefault({}),
  audit: AuditSchema.prefault({}),
  reconcile: ReconcileSchema.prefault({}),
  transfer: TransferSchema.prefault({}),
  // Resolved to an absolute path; a relative one against the config file's folder.
  data_dir: text('a folder for the grant database and audit log').default('./data'),
  logging: LoggingSchema.prefault({}),
  instances: z
    .record(
      z.string().regex(INSTANCE_NAME, {
        error: 'instance names must be 1-32 of a-z, 0-9, _ and -',
      }),
      InstanceSchema,
      {
        error: (issue) =>
          issue.code === 'invalid_key'
            ? 'is not a valid instance name: use 1-32 of a-z, 0-9, _ and - (lower case)'
            : 'must be a mapping of instance name to its settings',
      },
    )
    .refine((m) => Object.keys(m).length > 0, {
      error: 'must name at least one Nextcloud instance',
    }),
});

export type RawConfig = z.infer<typeof RawConfigSchema>;
