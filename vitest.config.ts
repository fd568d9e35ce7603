import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/**
 * Projects. `unit` is everything in test/ against the fakes. `real` (test/real/) runs
 * against the main real Nextcloud (34) described by NC_URL and friends, and `real-oldest`
 * runs the differential suite and a compatibility subset against the oldest series we
 * keep (29), described by the same variables prefixed NC_OLDEST_ (test/real/server.ts;
 * CONTRIBUTING.md, "The real-server suite"). A server that is not described is left out
 * with one line saying so; on CI (CI set) a missing server is an error, never a silent skip.
 */
const onCi = (process.env.CI ?? '') !== '' && process.env.CI !== 'false';
const described = (prefix: string): boolean => (process.env[`${prefix}URL`] ?? '') !== '';

/** The real-server files the oldest series runs: the differential suite and the compatibility subset. */
const OLDEST_SUBSET = [
  'test/real/differential/**/*.test.ts',
  'test/real/uploads.test.ts',
  'test/real/checkout-lock.test.ts',
  'test/real/agent-tools.test.ts',
  'test/real/search.test.ts',
  'test/real/groupware-client.test.ts',
  // What Nextcloud keeps beside the files (versions, trash bins, Activity), per series.
  'test/real/history-verbs.test.ts',
  // Nothing lost (issue 24): Nextcloud's own expiry and its refusals are its behaviour, per series.
  'test/real/space-expiry.test.ts',
  'test/real/trash-race.test.ts',
  'test/real/upload-refusals.test.ts',
  // Nothing lost, round four (issue 35): concurrent writes, shared folders, trash names.
  'test/real/space-concurrency.test.ts',
  'test/real/trash-names.test.ts',
  // Undo (issue 39): versions, the trash bins and their restores, per series.
  'test/real/undo.test.ts',
  // The broker's own account, and Nextcloud's records checked against the audit log (issue 38).
  'test/real/reconcile.test.ts',
];

function skipped(what: string, prefix: string): void {
  if (onCi)
    throw new Error(
      `CI is set but ${prefix}URL is not: ${what} cannot run. Run \`bash .ci/run\`, which builds the servers and exports them, or export ${prefix}URL and the rest (CONTRIBUTING.md, "The real-server suite").`,
    );
  // Vitest 5 evaluates this file once per run: the inline projects share its Vite server.
  console.log(
    `${what} skipped: ${prefix}URL is not set (to run it, see CONTRIBUTING.md, "The real-server suite")`,
  );
}

/** The NC_* variables of the oldest server, under the names the real-server suite reads. */
function oldestEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (key.startsWith('NC_OLDEST_') && value !== undefined)
      env[`NC_${key.slice('NC_OLDEST_'.length)}`] = value;
  return env;
}

/**
 * One server, reset between files: its files run one after another. In one vitest run the
 * projects run in group order (unit, real, real-oldest); `npm test` runs the two real ones
 * side by side instead, each in its own vitest process (scripts/test-real.ts).
 */
function realProject(
  name: string,
  include: string[],
  groupOrder: number,
  env?: Record<string, string>,
): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name,
      include,
      fileParallelism: false,
      sequence: { groupOrder },
      testTimeout: 120_000,
      hookTimeout: 120_000,
      ...(env === undefined ? {} : { env }),
    },
  };
}

const realProjects: TestProjectInlineConfiguration[] = [];
if (described('NC_')) realProjects.push(realProject('real', ['test/real/**/*.test.ts'], 1));
else skipped('the real-server suite (Nextcloud 34)', 'NC_');
if (described('NC_OLDEST_'))
  realProjects.push(realProject('real-oldest', OLDEST_SUBSET, 2, oldestEnv()));
else skipped('the oldest-server suite (Nextcloud 29)', 'NC_OLDEST_');

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Every temp folder of a run under one, removed at its end (support/test-tmp.ts).
    globalSetup: ['support/test-tmp.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/real/**'],
          // Vitest's default is one worker fewer than the CPUs: on CI's two, one. Most unit
          // files wait on sockets and subprocesses (brokers, fakes, the CLI), so two
          // workers on two CPUs keep both busy.
          maxWorkers: 2,
        },
      },
      ...realProjects,
    ],
    coverage: {
      provider: 'v8',
      include: ['broker/**/*.ts'],
      reporter: ['text-summary'],
      thresholds: {
        // Security: the wall is the one gate every path passes; every branch is tested.
        'broker/wall.ts': { branches: 100, functions: 100, lines: 100, statements: 100 },
        'broker/wall/*.ts': { branches: 100, functions: 100, lines: 100, statements: 100 },
      },
    },
  },
});
