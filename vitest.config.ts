import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    coverage: {
      provider: 'v8',
      include: ['broker/**/*.ts'],
      reporter: ['text-summary'],
      thresholds: {
        // Security: the wall is the one gate every path passes; every branch is tested.
        'broker/wall.ts': { branches: 100, functions: 100, lines: 100, statements: 100 },
      },
    },
  },
});
