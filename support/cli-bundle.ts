/**
 * The agent's file (dist/broker-cli.mjs) as the tests, the bench and the review run it:
 * built from the current source once per process by the same function `npm run build`
 * uses, into a folder under the system's temp folder. Nothing there can resolve a
 * package (no node_modules above it), so a module the bundle failed to include fails
 * the command that needs it, as it would on an agent's host.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildClientBundle } from '../scripts/build-cli.js';
import { clientCommands } from '../cli/client/commands/index.js';

let built: Promise<string> | undefined;

/**
 * The folder the bundles go to: one per user under the temp folder, private to them
 * (the tests run what is in it). Each build is named by its content, so runs of the
 * same source share one file and nothing piles up.
 */
function bundleFolder(): string {
  const uid = process.getuid?.();
  const dir = join(tmpdir(), `broker-cli-bundle-${uid ?? 'user'}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) {
    throw new Error(`${dir} is not a private folder of this user: remove it, then run again`);
  }
  return dir;
}

/** The path of a freshly built agent's file (built on the first call). */
export function cliBundle(): Promise<string> {
  built ??= (async () => {
    const dir = bundleFolder();
    const temp = join(dir, `.build-${process.pid}-${randomBytes(4).toString('hex')}.mjs`);
    await buildClientBundle(temp);
    const sha = createHash('sha256').update(readFileSync(temp)).digest('hex').slice(0, 16);
    const file = join(dir, `broker-cli-${sha}.mjs`);
    // Atomic: a process running an identical file keeps running the one it opened.
    renameSync(temp, file);
    return file;
  })();
  return built;
}

const CLIENT_COMMAND_NAMES: ReadonlySet<string> = new Set(clientCommands.map((c) => c.name));

/** Whether `broker <name>` is one the agent's file runs (bin/broker.js sends it there). */
export const isClientCommand = (name: string | undefined): boolean =>
  name !== undefined && CLIENT_COMMAND_NAMES.has(name);
