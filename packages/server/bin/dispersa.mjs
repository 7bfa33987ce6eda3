#!/usr/bin/env node
// The `dispersa` command. No build step: tsx compiles the TypeScript sources on the fly (and caches them).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
