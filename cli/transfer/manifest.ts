/**
 * The staging manifest: one JSON file per staging root recording what was staged —
 * instance, path, size, sha256, etag, when, and the lock token of a checkout. It is
 * how `push` knows which etag it may replace and how `fetch` notices a local edit.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { usageError } from './errors.js';

export const MANIFEST_NAME = '.broker-manifest.json';

const EntrySchema = z
  .object({
    instance: z.string(),
    path: z.string(),
    local_path: z.string(),
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    etag: z.string().nullable(),
    fetched_at: z.string(),
    lock_token: z.string().optional(),
  })
  .strict();
export type ManifestEntry = z.infer<typeof EntrySchema>;

const ManifestSchema = z
  .object({ version: z.literal(1), files: z.record(z.string(), EntrySchema) })
  .strict();
type ManifestFile = z.infer<typeof ManifestSchema>;

export const manifestKey = (instance: string, path: string): string => `${instance}:${path}`;

export class Manifest {
  private constructor(
    private readonly file: string,
    private readonly data: ManifestFile,
  ) {}

  static async load(root: string): Promise<Manifest> {
    const file = join(root, MANIFEST_NAME);
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        return new Manifest(file, { version: 1, files: {} });
      }
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const result = ManifestSchema.safeParse(parsed);
    if (!result.success) {
      throw usageError(
        `the staging manifest ${file} is damaged`,
        'move it aside; staged files will then be treated as unknown local files (use --force to overwrite them)',
      );
    }
    return new Manifest(file, result.data);
  }

  get(instance: string, path: string): ManifestEntry | undefined {
    const key = manifestKey(instance, path);
    // Security: keys come from remote paths; never read inherited properties.
    return Object.hasOwn(this.data.files, key) ? this.data.files[key] : undefined;
  }

  set(entry: ManifestEntry): void {
    this.data.files[manifestKey(entry.instance, entry.path)] = entry;
  }

  /** Writes atomically: a temp file, fsync, then rename over the old manifest. */
  async save(): Promise<void> {
    const temp = `${this.file}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await fs.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(this.data, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, this.file);
  }
}

/** What a successful transfer leaves behind: the manifest entry and the command's result. */
export async function recordStaged(
  manifest: Manifest,
  staged: {
    instance: string;
    path: string;
    local_path: string;
    sha256: string;
    size: number;
    etag: string | null;
    lock_token?: string;
  },
  status: string,
): Promise<{
  status: string;
  local_path: string;
  sha256: string;
  size: number;
  etag: string | null;
}> {
  manifest.set({ ...staged, fetched_at: new Date().toISOString() });
  await manifest.save();
  return {
    status,
    local_path: staged.local_path,
    sha256: staged.sha256,
    size: staged.size,
    etag: staged.etag,
  };
}
