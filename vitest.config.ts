import { defineConfig } from 'vitest/config';

/**
 * Two projects. `unit` is everything in test/ against the fakes. `real` (test/real/)
 * runs against a real Nextcloud 29 described by NC_URL and friends (test/real/server.ts;
 * CONTRIBUTING.md, "The real-server suite"). Without NC_URL it is left out with one line
 * saying so; on CI (CI set) a missing server is an error, never a silent skip.
 */
const onCi = (process.env.CI ?? '') !== '' && process.env.CI !== 'false';
const realServer = (process.env.NC_URL ?? '') !== '';
if (!realServer) {
  if (onCi)
    throw new Error(
      'CI is set but NC_URL is not: the real-server suite cannot run. Run `bash .ci/run`, which builds a Nextcloud and exports it, or export NC_URL and the rest (CONTRIBUTING.md, "The real-server suite").',
    );
  // Vitest evaluates this file more than once per run (once per project); say it once.
  const said = Symbol.for('nextcloud-access-broker.real-suite-skipped');
  const seen = globalThis as { [said]?: true };
  if (seen[said] !== true) {
    seen[said] = true;
    console.log(
      'real-server suite skipped: NC_URL is not set (to run it, see CONTRIBUTING.md, "The real-server suite")',
    );
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: ['test/real/**'] },
      },
      ...(realServer
        ? [
            {
              extends: true as const,
              test: {
                name: 'real',
                include: ['test/real/**/*.test.ts'],
                // One server, reset between files: its files run one after another, after
                // the unit project (so neither slows the other's timing-sensitive tests).
                fileParallelism: false,
                sequence: { groupOrder: 1 },
                testTimeout: 120_000,
                hookTimeout: 120_000,
              },
            },
          ]
        : []),
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
