/**
 * The layers of the broker (docs/architecture.md, "The layers"), enforced on every
 * `npm test`. A module may import its own layer and the layers below it, never one
 * above; modules of peer parts in one layer do not import each other; nothing imports
 * the tests; the Nextcloud client is the pipeline's alone. Type-only imports count.
 */

/** Production layers, bottom first. Each entry: name, path pattern, peer groups. */
const LAYERS = [
  { name: 'base', path: '^broker/base/' },
  { name: 'wall and config', path: '^broker/(wall\\.ts$|wall/|config\\.ts$|config/)' },
  { name: 'grants, audit, nextcloud', path: '^broker/(grants|audit|nextcloud)/' },
  { name: 'operations', path: '^broker/operations/' },
  { name: 'approval, surfaces', path: '^broker/(approval|surfaces)/' },
  {
    name: 'app, assemble, main, data folder, doctor',
    path: '^broker/(app\\.ts|assemble\\.ts|assemble/|main\\.ts|data-folder\\.ts|doctor/)',
  },
  { name: 'cli, demo, scripts', path: '^(cli/|broker/demo/|scripts/)' },
];

/** Parts of one layer that stand side by side: none imports another. */
const PEERS = [
  { wall: '^broker/wall(\\.ts$|/)', config: '^broker/config(\\.ts$|/)' },
  { grants: '^broker/grants/', audit: '^broker/audit/', nextcloud: '^broker/nextcloud/' },
  { approval: '^broker/approval/', surfaces: '^broker/surfaces/' },
];

const above = (i) =>
  LAYERS.slice(i + 1)
    .map((l) => `(${l.path})`)
    .join('|');

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-order: ${layer.name}`,
  comment: `${layer.name} may not import a layer above it (${LAYERS.slice(i + 1)
    .map((l) => l.name)
    .join('; ')})`,
  severity: 'error',
  from: { path: layer.path },
  to: { path: above(i) },
}));

const peerRules = PEERS.flatMap((group) =>
  Object.entries(group).map(([name, path]) => ({
    name: `peers: ${name}`,
    comment: `${name} does not import ${Object.keys(group)
      .filter((other) => other !== name)
      .join(' or ')}, its peers in one layer`,
    severity: 'error',
    from: { path },
    to: {
      path: Object.entries(group)
        .filter(([other]) => other !== name)
        .map(([, p]) => `(${p})`)
        .join('|'),
    },
  })),
);

/**
 * The shared protocol: what the agent host's client takes of broker/ (and the agent's
 * file, dist/broker-cli.mjs, carries). What the two programs say to each other
 * (protocol.ts, transfer-tools.ts), and the rules both apply to it: the wall's canonical
 * path and its limits, the etag form, the text escaping, the coded-error base and its
 * one-line form, the version, the relay's memory bound. Each imports only others of
 * this list and node's own modules (test/cli/client/bundle.test.ts checks the packages).
 */
const SHARED =
  '^broker/(base/(protocol|transfer-tools|coded-error|errors|etag|limits|relayed-memory|text|version)\\.ts|wall/canonical\\.ts)$';

/** The agent host's client and the command frame it shares with the owner's commands. */
const CLIENT_SIDE = '^cli/(client/|(args|command|completion|dispatch|terminal|usage)\\.ts$)';

/** The Nextcloud client and its verbs: what a pipeline step holds. */
const CLIENT = '^broker/nextcloud/(client|files|search|transfers|locks|index)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no module reaches itself through its imports',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    ...peerRules,
    {
      name: 'fakes-stand-alone',
      comment: 'the fakes behave like the real servers, not like our code: they import none of it',
      severity: 'error',
      from: { path: '^fakes/' },
      to: { path: '^(broker|cli|scripts|support|test|bench|review)/' },
    },
    {
      name: 'broker-and-cli-below-support',
      comment: 'the shipped code never imports what tests, bench and review share',
      severity: 'error',
      from: { path: '^(broker|cli|scripts)/' },
      to: { path: '^(support|bench|review)/' },
    },
    {
      name: 'nothing-imports-test',
      comment: 'test/ is imported by nothing outside it (shared helpers live in support/)',
      severity: 'error',
      from: { pathNot: '^test/' },
      to: { path: '^test/' },
    },
    {
      name: 'support-below-its-users',
      comment: 'support/ serves test, bench and review and imports none of them',
      severity: 'error',
      from: { path: '^support/' },
      to: { path: '^(test|bench|review)/' },
    },
    {
      name: 'bench-and-review-apart',
      comment: 'the benchmarks and the review share through support/, not each other',
      severity: 'error',
      from: { path: '^(bench|review)/' },
      to: { path: '^(bench|review)/', pathNot: '^$1/' },
    },
    {
      name: 'client-imports-only-the-shared-protocol',
      comment:
        "the agent host's client (cli/client/ and the command frame) takes nothing of broker/ but the shared protocol",
      severity: 'error',
      from: { path: CLIENT_SIDE },
      to: { path: '^broker/', pathNot: SHARED },
    },
    {
      name: 'client-apart-from-owner',
      comment:
        "the agent host's client and the frame import none of the owner's commands (cli/owner/), which load the daemon",
      severity: 'error',
      from: { path: CLIENT_SIDE },
      to: { path: '^cli/(owner/|main\\.ts$)' },
    },
    {
      name: 'frame-below-both-programs',
      comment: 'the command frame (cli/*.ts but main.ts) imports neither program',
      severity: 'error',
      from: { path: '^cli/[^/]+\\.ts$', pathNot: '^cli/main\\.ts$' },
      to: { path: '^cli/(client|owner)/' },
    },
    {
      name: 'shared-protocol-stands-alone',
      comment:
        "the shared protocol imports nothing else of broker/ or cli/: the agent's file carries no daemon code (test/cli/client/bundle.test.ts also keeps packages out)",
      severity: 'error',
      from: { path: SHARED },
      to: { path: '^(broker|cli)/', pathNot: SHARED },
    },
    {
      name: 'nextcloud-client-only-in-the-pipeline',
      comment:
        'only operations (the pipeline steps) and the wiring (broker/assemble.ts, broker/assemble/) hold the Nextcloud client',
      severity: 'error',
      from: {
        path: '^(broker|cli|scripts|fakes|support|bench|review)/',
        pathNot: '^broker/(operations/|nextcloud/|assemble\\.ts$|assemble/)',
      },
      to: { path: CLIENT },
    },
    {
      name: 'nextcloud-connection-only-for-the-doctor',
      comment:
        'a credentialed connection outside the client is the doctor’s, which checks the server',
      severity: 'error',
      from: {
        path: '^(broker|cli|scripts|fakes|support|bench|review)/',
        pathNot: '^broker/(nextcloud|doctor)/',
      },
      to: { path: '^broker/nextcloud/connection\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|coverage|data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
