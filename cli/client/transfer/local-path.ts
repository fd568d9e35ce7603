/**
 * Where a remote file goes on the agent's host (or comes from, for an upload): LOCAL as
 * given, or the staging path; never the CLI's state folder. Nothing is created here.
 */
import { promises as fs } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { isWithin } from './env.js';
import { CliError, usageError } from './errors.js';
import { LEGACY_MANIFEST_NAME } from './state.js';
import type { RemoteTarget } from './target.js';

export interface LocalPlan {
  /** The folder below which missing folders may be created (the staging root, or LOCAL's folder). */
  readonly root: string;
  /** Absolute path of the local file. */
  readonly file: string;
}

/**
 * The local path for a remote target. LOCAL, when given, is a file path (any
 * `local_path` an earlier command printed), or a folder (an existing one, or one
 * written with a trailing `/`) that receives the remote file name. Without LOCAL:
 * `<stageRoot>/<instance>/<path>`. Nothing is created here.
 */
export async function planLocal(
  target: RemoteTarget,
  stageRoot: string,
  stateDir: string,
  local?: string,
): Promise<LocalPlan> {
  if (local !== undefined) {
    let file = resolve(local);
    const st = await fs.lstat(file).catch(() => undefined);
    if (local.endsWith('/') || (st?.isDirectory() ?? false)) {
      file = join(file, target.components[target.components.length - 1] ?? '');
    }
    await refuseStateFolder(file, stateDir);
    return { root: dirname(file), file };
  }
  const file = resolve(stageRoot, target.instance, ...target.components);
  // Security: the wall already refused `..` and separators; this re-checks the result.
  if (!file.startsWith(resolve(stageRoot) + sep)) {
    throw new CliError('refused', 'path leaves the staging folder', 'use a plain relative path');
  }
  return { root: resolve(stageRoot), file };
}

/** The real path of `path`, through its nearest existing ancestor. */
export async function realPathOf(path: string): Promise<string> {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(await fs.realpath(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      rest.push(basename(current));
      current = parent;
    }
  }
}

/**
 * Security: the CLI's records decide what it may overwrite; a LOCAL inside their folder
 * (as written, or through a symlink) would let a fetched file replace one.
 */
async function refuseStateFolder(file: string, stateDir: string): Promise<void> {
  if (isWithin(file, stateDir) || isWithin(await realPathOf(file), await realPathOf(stateDir))) {
    throw usageError(
      `${file} is inside the CLI state folder ${stateDir}`,
      'name a LOCAL path outside it',
    );
  }
}

/**
 * Says so when a manifest of an older version sits in the staging folder or in LOCAL's
 * folder: it is never read again (a fetched file could pose as one), so the files it
 * listed now count as local files the CLI did not stage.
 */
export async function noteLegacyManifests(
  stageRoot: string,
  plan: LocalPlan,
  stateDir: string,
  warn: ((note: string) => void) | undefined,
): Promise<void> {
  for (const dir of new Set([resolve(stageRoot), dirname(plan.file)])) {
    const file = join(dir, LEGACY_MANIFEST_NAME);
    if ((await fs.lstat(file).catch(() => undefined)) === undefined) continue;
    warn?.(
      `not reading ${file}: a manifest inside a staging folder is never trusted (a fetched file could pose as one); the CLI keeps its records in ${stateDir}, so files staged before count as local files it did not stage (save your edits, then fetch them again with --force)`,
    );
  }
}
