import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The monorepo runs the SDK from its sources (as tsconfig's paths do for tsc and tsx); dist/ is for integrators.
  resolve: { alias: { '@dispersa/sdk': fileURLToPath(new URL('packages/sdk/src/index.ts', import.meta.url)) } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'packages/*/src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default'],
  },
});
