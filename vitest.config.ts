import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The monorepo runs the SDK from its sources (as tsconfig's paths do for tsc and tsx); dist/ is for integrators.
  resolve: { alias: { '@dispersa/sdk': fileURLToPath(new URL('packages/sdk/src/index.ts', import.meta.url)) } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'packages/*/src/**/*.test.ts'],
    // Bounds against a hang, not speed requirements: CI machines are shared, and a test that takes 15 s on an idle
    // machine takes three times that while other work runs beside it.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default'],
  },
});
