/**
 * The agent's file (dist/broker-cli.mjs) as the tests, the bench and the review run it:
 * built from the current source once per process by the same function `npm run build`
 * uses, into a fresh folder under the system's temp folder. Nothing there can resolve a
 * package (no node_modules above it), so a module the bundle failed to include fails
 * the command that needs it, as it would on an agent's host.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildClientBundle } from '../scripts/build-cli.js';
import { clientCommands } from '../cli/commands/client.js';

let built: Promise<string> | undefined;

/** The path of a freshly built agent's file (built on the first call). */
export function cliBundle(): Promise<string> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'broker-cli-bundle-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'broker-cli.mjs');
    await buildClientBundle(file);
    return file;
  })();
  return built;
}

const CLIENT_COMMAND_NAMES: ReadonlySet<string> = new Set(clientCommands.map((c) => c.name));

/** Whether `broker <name>` is one the agent's file runs (bin/broker.js sends it there). */
export const isClientCommand = (name: string | undefined): boolean =>
  name !== undefined && CLIENT_COMMAND_NAMES.has(name);
