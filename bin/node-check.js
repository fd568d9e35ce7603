// Which Node.js may run the broker, decided by bin/broker.js before anything else loads.
//
// The broker's SQLite module (better-sqlite3 13) is native code speaking Node-API 10,
// which Node 22 and later have. Node 20 loads it all the same and then crashes with a
// segmentation fault and no word. So the shim refuses a Node older than the package's
// `engines` (>=22) first, naming the Node found, the ones needed and the way to them:
// `. scripts/use-node.sh`, or the Node this install was built with (dist/node.json,
// written by scripts/record-node.ts, which refuses to record an older one).
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
export const USE_NODE =
  '`. scripts/use-node.sh` in the repository (it puts the pinned Node 24 first on PATH)';

const majorOf = (version) => Number(/^v?(\d+)\./.exec(version)?.[1] ?? 'NaN');

/** True for a Node major the broker runs on. */
export function supportedNode(version) {
  return majorOf(version) >= MIN_NODE_MAJOR;
}

/**
 * Why this Node cannot run the broker, or undefined when it can.
 *
 * @param {{ version: string, execPath: string }} running
 *   this process's Node: `process.version`, `process.execPath`
 * @param {{ version: string, path: string } | undefined} built
 *   the Node `npm ci` built this install with (dist/node.json); undefined when unknown
 * @returns {{ error: string, nextStep: string } | undefined}
 */
export function nodeProblem(running, built) {
  if (supportedNode(running.version)) return undefined;
  const found = `Node.js ${running.version.replace(/^v/, '')} (${running.execPath})`;
  const withBuilt =
    built !== undefined && supportedNode(built.version)
      ? `, or run it with the Node this install was built with: ${built.path}`
      : '';
  return {
    error: `${found} cannot run the broker: it needs ${SUPPORTED_NODES} (engines >=${MIN_NODE_MAJOR})`,
    nextStep: `run ${USE_NODE} and try again${withBuilt}`,
  };
}
