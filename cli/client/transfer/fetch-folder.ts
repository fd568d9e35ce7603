/**
 * `broker fetch --recursive INSTANCE:FOLDER [LOCAL]`: every file below the folder, found by
 * folder-walk.ts, fetched as several targets are (fetch-many.ts: each file its own ticket,
 * wall decision, audit record, verification and record here; a few at a time). One
 * progress line counts the bytes of the files done, in place of one bar per file.
 */
import type { ClientContext } from './run.js';
import { download } from './download.js';
import { fetchMany } from './fetch-many.js';
import { walkFolder } from './folder-walk.js';
import type { Outcome } from './output.js';
import type { RemoteTarget } from './target.js';

/** No bar per file: several run at once on one terminal line. */
const QUIET = { add: () => undefined, stop: () => undefined };

export async function fetchFolder(ctx: ClientContext, force: boolean): Promise<Outcome> {
  const folder = ctx.target;
  const found = await walkFolder(ctx.client, folder, {
    local: ctx.local,
    stageRoot: ctx.stageRoot,
  });
  const localOf = new Map(found.map((f) => [`${f.target.instance}:${f.target.path}`, f.local]));
  const sizes = found.map((f) => f.size);
  const total = sizes.every((s) => s !== null) ? sizes.reduce((a, b) => a + b, 0) : null;
  const progress = ctx.progress(`fetch ${folder.path}/ (${found.length} files)`, total);
  const one = async (target: RemoteTarget): Promise<Outcome> => {
    const outcome = await download({
      ...ctx,
      target,
      local: localOf.get(`${target.instance}:${target.path}`),
      force,
      mode: 'fetch',
      progress: () => QUIET,
    });
    progress.add(typeof outcome.size === 'number' ? outcome.size : 0);
    return outcome;
  };
  try {
    const { status, ...rest } = await fetchMany(
      found.map((f) => f.target),
      one,
    );
    return { status, folder: `${folder.instance}:${folder.path}`, ...rest };
  } finally {
    progress.stop();
  }
}
