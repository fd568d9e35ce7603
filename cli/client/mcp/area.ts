/**
 * Where `broker mcp` may read and write on the agent's host: its working folder (where the
 * agent's MCP client started it) and the staging folder. An agent that speaks to it has
 * no shell; a `local` path is how it names a file, so a path is judged by where it
 * resolves, not by how it is spelled: after `realpath` of its nearest existing folder, it
 * must lie inside one of those folders (each resolved the same way, so a home folder or
 * `/tmp` that is itself a link still works). A link on the way that leads out of them is
 * refused, as a link at the file itself always was (staging.ts).
 */
import { resolve } from 'node:path';
import { isWithin } from '../transfer/env.js';
import { CliError } from '../transfer/errors.js';
import { realPathOf } from '../transfer/local-path.js';

/** Throws a usage error unless `local` resolves inside one of `roots` (each resolved too). */
export async function confineLocal(local: string, roots: readonly string[]): Promise<void> {
  const real = await realPathOf(resolve(local));
  const areas = await Promise.all(roots.map((root) => realPathOf(resolve(root))));
  // Security: judged on the resolved path: a symlinked folder on the way cannot lead a
  // fetch out to write, or a push out to read, what lies beyond the agent's folders.
  if (areas.some((area) => isWithin(real, area))) return;
  throw new CliError(
    'usage',
    `${local} resolves to ${real}, outside the folders broker mcp may use (${areas.join(', ')}): a link on the way leads out of them`,
    'name a path inside the working folder or the staging folder',
  );
}
