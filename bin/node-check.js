// Which Node.js may run the broker, decided by bin/broker.js before anything else loads.
//
// The broker's SQLite module (better-sqlite3) is native code built at `npm ci` for one
// Node ABI. Loaded by another Node it fails, and by Node 20 it crashes the process with a
// segmentation fault and no word. So the shim refuses first, with the cause and the next
// step: a Node older than the package's `engines` (>=22), or a Node whose ABI is not the
// one this install was built with (dist/node.json, written by scripts/record-node.ts).
//
// Plain JavaScript any Node parses, importing nothing: it must speak on the Node it
// refuses. The agent's commands (fetch, push, checkout, checkin, mcp) are not checked
// here: they run the agent's file, dist/broker-cli.mjs, which loads nothing native and
// runs on Node 20 too (docs/clients.md).

/** The oldest Node major the broker runs on (package.json `engines`: >=22). */
export const MIN_NODE_MAJOR = 22;

/** What the README promises, in words. */
export const SUPPORTED_NODES = 'Node.js 22, 24 or 26';

/** The install folder's way to the pinned Node (CONTRIBUTING.md, "Node"). */
const USE_NODE =
  '`. scripts/use-node.sh` in the repository (it puts the pinned Node 24 first on PATH)';

const majorOf = (version) => Number(/^v?(\d+)\./.exec(version)?.[1] ?? 'NaN');

/**
 * Why this Node cannot run the broker, or undefined when it can.
 *
 * @param {{ version: string, modules: string, execPath: string }} running
 *   this process's Node: `process.version`, `process.versions.modules`, `process.execPath`
 * @param {{ version: string, modules: string, path: string } | undefined} built
 *   the Node `npm ci` built this install with (dist/node.json); undefined when unknown
 * @returns {{ error: string, nextStep: string } | undefined}
 */
export function nodeProblem(running, built) {
  const found = `Node.js ${running.version.replace(/^v/, '')} (${running.execPath})`;
  const builtUsable = built !== undefined && majorOf(built.version) >= MIN_NODE_MAJOR;
  const withBuilt = builtUsable
    ? `, or run it with the Node this install was built with: ${built.path}`
    : '';
  const major = majorOf(running.version);
  if (!(major >= MIN_NODE_MAJOR)) {
    return {
      error: `${found} cannot run the broker: it needs ${SUPPORTED_NODES} (engines >=${MIN_NODE_MAJOR})`,
      nextStep: `run ${USE_NODE} and try again${withBuilt}`,
    };
  }
  if (built !== undefined && built.modules !== running.modules) {
    return {
      error: `this install was built with Node.js ${built.version.replace(/^v/, '')} (${built.path}), whose native modules this ${found} cannot load (ABI ${built.modules}, not ${running.modules})`,
      nextStep: `run it with ${built.path}, or run \`npm ci\` again under this Node`,
    };
  }
  return undefined;
}
