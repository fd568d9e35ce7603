/**
 * `broker fetch --recursive INSTANCE:FOLDER`: the files below a remote folder, found with
 * the transfer surface's `list` (a page at a time, folder by folder), each with the local
 * path that mirrors it. Nothing is fetched here: the files are then fetched one by one as
 * several targets are (fetch-many.ts), each its own ticket, wall decision and audit record.
 * What the walk finds that a mirror cannot hold is refused before any file is fetched.
 */
import { promises as fs } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ListedEntry as Entry } from '../../../broker/base/transfer-tools.js';
import type { TransferClient } from './broker-client.js';
import { CliError, usageError } from './errors.js';
import { parseTarget, type RemoteTarget } from './target.js';

/** The most files one recursive fetch takes; a larger tree is refused before any fetch. */
export const MAX_RECURSIVE_FILES = 5000;

/** A file found below the folder, and where it goes locally (undefined: staged). */
export interface FoundFile {
  readonly target: RemoteTarget;
  readonly local: string | undefined;
  /** null when the listing gave none (discovery lists names only). */
  readonly size: number | null;
}

/** What the walk reads of an entry `list` answered (broker/base/transfer-tools.ts). */
type ListedEntry = Readonly<Pick<Entry, 'name' | 'kind' | 'path' | 'size'>>;

const isEntry = (v: unknown): v is ListedEntry => {
  const e = v as { readonly [K in keyof ListedEntry]?: unknown } | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.name === 'string' &&
    (e.kind === 'file' || e.kind === 'folder')
  );
};

/** One page of a folder's listing, as the broker answered it. */
async function listPage(
  client: TransferClient,
  folder: RemoteTarget,
  cursor: string | undefined,
): Promise<{ entries: ListedEntry[]; next: string | undefined }> {
  const page = await client.call('list', {
    instance: folder.instance,
    path: folder.path,
    ...(cursor === undefined ? {} : { cursor }),
  });
  const entries = page.entries;
  if (!Array.isArray(entries) || !entries.every(isEntry))
    throw new CliError(
      'infrastructure',
      `the broker's list answer for ${folder.instance}:${folder.path} was not understood`,
      'check that the CLI and broker versions match (a broker without the list tool cannot fetch --recursive)',
    );
  const next = page.next;
  return { entries, next: typeof next === 'string' ? next : undefined };
}

const where = (t: RemoteTarget): string => `${t.instance}:${t.path}`;

/**
 * Every file below `folder` (folders first, then by name, as the broker lists them),
 * each with its local path: `LOCAL/<path inside the folder>` when `local` is given,
 * else staged at its own place. Refuses, before anything is fetched, a tree it cannot
 * mirror: a name the wall refuses, two names that are one local path, a local file where
 * a folder must go (or a local folder where a file must), or more than
 * MAX_RECURSIVE_FILES files.
 */
export async function walkFolder(
  client: TransferClient,
  folder: RemoteTarget,
  mirror: { readonly local: string | undefined; readonly stageRoot: string },
): Promise<FoundFile[]> {
  const files: FoundFile[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const { local, stageRoot } = mirror;
  const localOf = (t: RemoteTarget): string | undefined =>
    local === undefined
      ? undefined
      : resolve(local, ...t.components.slice(folder.components.length));
  // Where the file or folder lands: LOCAL's mirror, or the staging path (local-path.ts).
  const landing = (t: RemoteTarget): string =>
    localOf(t) ?? join(resolve(stageRoot), t.instance, ...t.components);
  const queue: RemoteTarget[] = [folder];
  for (let current = queue.shift(); current !== undefined; current = queue.shift()) {
    // Nothing below a folder that is not there locally can be in the way.
    const mirrored = (await fs.lstat(landing(current)).catch(() => undefined)) !== undefined;
    let cursor: string | undefined;
    do {
      const page = await listPage(client, current, cursor);
      cursor = page.next;
      for (const entry of page.entries) {
        const remote = `${current.instance}:${entry.path ?? `${current.path}/${entry.name}`}`;
        let target: RemoteTarget;
        try {
          // Security: each name passes the wall's rules before it becomes a local path.
          target = parseTarget(remote);
        } catch (error) {
          problems.push(`${remote}: ${error instanceof Error ? error.message : 'refused'}`);
          continue;
        }
        // Two remote names the canonical form makes one (NFC, a trailing space…) would be
        // one local file: fetching both would let the second replace the first.
        const other = seen.get(target.path);
        if (other !== undefined) {
          problems.push(`${remote} and ${other} are the same local path`);
          continue;
        }
        seen.set(target.path, remote);
        const mismatch = mirrored
          ? await localKindMismatch(landing(target), entry.kind)
          : undefined;
        if (mismatch !== undefined) problems.push(`${remote}: ${mismatch}`);
        else if (entry.kind === 'folder') queue.push(target);
        else files.push({ target, local: localOf(target), size: entry.size ?? null });
      }
      if (files.length > MAX_RECURSIVE_FILES)
        throw usageError(
          `${where(folder)} holds more than ${MAX_RECURSIVE_FILES} files; nothing was fetched`,
          'fetch its subfolders one at a time with --recursive',
        );
    } while (cursor !== undefined);
  }
  if (problems.length > 0)
    throw usageError(
      `cannot mirror ${where(folder)} locally (${problems.length} problem${problems.length === 1 ? '' : 's'}; nothing was fetched): ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? '; …' : ''}`,
      'fetch the other files by name, or fix these names or local paths first',
    );
  return files;
}

/** Why a local path cannot take a remote file or folder (undefined: it can). */
async function localKindMismatch(
  path: string,
  kind: 'file' | 'folder',
): Promise<string | undefined> {
  const st = await fs.lstat(path).catch(() => undefined);
  if (st === undefined) return undefined;
  if (kind === 'folder' && !st.isDirectory())
    return `a folder on Nextcloud, but ${path} is a local file`;
  if (kind === 'file' && st.isDirectory())
    return `a file on Nextcloud, but ${path} is a local folder`;
  return undefined;
}
