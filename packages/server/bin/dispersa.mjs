#!/usr/bin/env node
// The `dispersa` command. No build step: tsx compiles the TypeScript sources on the fly (and caches them).
// The repository's tsconfig is named wherever the command runs from: its `paths` send @dispersa/sdk to the SDK's
// sources, so the command never needs the SDK's build (dist/, made for integrators by `npm pack`).
import { register } from 'tsx/esm/api';

register({ tsconfig: new URL('../../../tsconfig.json', import.meta.url).pathname });
await import('../src/cli/main.ts');
