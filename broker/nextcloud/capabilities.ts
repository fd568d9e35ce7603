/**
 * `GET /ocs/v2.php/cloud/capabilities?format=json`, read into the facts the broker acts
 * on: whether deletes go to the trash bin, whether token locks are available, and the
 * largest chunk a chunked upload may use.
 */
import { z } from 'zod';
import { MAX_SMALL_REPLY_BYTES, type NextcloudConnection } from './connection.js';
import { NextcloudError } from './errors.js';
import { parseBaseUrl } from './url.js';

/**
 * The JSON text of an OCS v2 GET on the instance: `cloud/capabilities` (verb
 * CAPABILITIES) or `cloud/user` (verb SPACE); the verb names the read in errors.
 */
export async function getOcsJson(
  conn: NextcloudConnection,
  route: string,
  verb: 'CAPABILITIES' | 'SPACE',
  signal?: AbortSignal,
): Promise<string> {
  const base = parseBaseUrl(conn.instance.url).pathname.replace(/\/+$/, '');
  const url = new URL(`${conn.origin}${base}/ocs/v2.php/${route}`);
  url.searchParams.set('format', 'json');
  const { text } = await conn.exchange(
    { method: 'GET', url, headers: { 'ocs-apirequest': 'true', accept: 'application/json' } },
    {
      idempotent: true,
      ok: [200],
      ctx: { verb, instance: conn.name, path: '' },
      signal,
    },
    MAX_SMALL_REPLY_BYTES,
  );
  return text;
}

export interface Capabilities {
  /** files_trashbin is on: a DELETE can be undone. */
  undelete: boolean;
  /** files_lock is on: LOCK/UNLOCK work. */
  locking: boolean;
  /** files_versions is on (`files.versioning`): a replaced content is kept as a version. */
  versioning: boolean;
  /** `files.chunked_upload.max_size` (Nextcloud 31+: 100 MiB by default); null if unsaid. */
  maxChunkSize: number | null;
}

// Not `.strict()`: this is Nextcloud's document with hundreds of keys we do not use;
// unknown keys are stripped and only the fields below are trusted.
// The flags stay `unknown`: an odd type reads as "off", never as a broken document.
const FilesSchema = z.object({
  undelete: z.unknown().optional(),
  locking: z.unknown().optional(),
  versioning: z.unknown().optional(),
  chunked_upload: z
    .object({ max_size: z.unknown().optional() })
    .partial()
    .optional()
    .catch(undefined),
});
const OcsSchema = z.object({
  ocs: z.object({
    data: z.object({
      capabilities: z.object({ files: FilesSchema.optional() }),
    }),
  }),
});

/** An OCS answer's JSON read with `schema`; undefined when it is not JSON or not that shape. */
export function ocsJsonOf<T>(json: string, schema: z.ZodType<T>): T | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(doc);
  return parsed.success ? parsed.data : undefined;
}

export function parseCapabilities(json: string): Capabilities {
  const parsed = ocsJsonOf(json, OcsSchema);
  if (parsed === undefined)
    throw new NextcloudError(
      'bad_response',
      'Nextcloud sent capabilities the broker cannot read: not retried; report this to the owner',
    );
  const files = parsed.ocs.data.capabilities.files;
  return {
    // Security: only an explicit `true` counts; anything else means a DELETE could be
    // permanent, so trash is refused.
    undelete: files?.undelete === true,
    locking: typeof files?.locking === 'string' && files.locking !== '',
    // Only an explicit `true`: undo restores a replaced file only from a kept version.
    versioning: files?.versioning === true,
    maxChunkSize: chunkSizeOf(files?.chunked_upload?.max_size),
  };
}

/** A usable chunk size (a whole number of bytes, at least 1 MiB), or null. */
function chunkSizeOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 2 ** 20
    ? value
    : null;
}

/** Trash bin and locking support, cached for the client's `capabilitiesTtlMs` (60 s). */
export function readCapabilities(
  { capabilities }: { readonly capabilities: CapabilitiesCache },
  signal?: AbortSignal,
): Promise<Capabilities> {
  return capabilities.get(signal);
}

/** The capabilities, asked afresh by `fetch` (which refreshes the cache) or cached by `get`. */
export class CapabilitiesCache {
  #cached: { value: Capabilities; at: number } | undefined;

  readonly #conn: NextcloudConnection;
  readonly #ttlMs: number;

  constructor(conn: NextcloudConnection, ttlMs: number) {
    this.#conn = conn;
    this.#ttlMs = ttlMs;
  }

  /** Cached for `ttlMs`. */
  async get(signal?: AbortSignal): Promise<Capabilities> {
    const cached = this.#cached;
    if (cached !== undefined && this.#conn.now() - cached.at < this.#ttlMs) return cached.value;
    return this.fetch(signal);
  }

  async fetch(signal?: AbortSignal): Promise<Capabilities> {
    const conn = this.#conn;
    const text = await getOcsJson(conn, 'cloud/capabilities', 'CAPABILITIES', signal);
    const value = parseCapabilities(text);
    this.#cached = { value, at: conn.now() };
    return value;
  }
}
