#!/usr/bin/env node
// Builds dist/ for integrators: ESM JavaScript and .d.ts from src/ (tsc), from a clean directory. tsc rewrites the
// sources' relative `.ts` imports to `.js` in the JavaScript but leaves them in the declarations, where a consumer's
// compiler would look for files that are not shipped; those are rewritten here.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('.', import.meta.url));
const dist = `${root}dist`;
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
for (const name of readdirSync(dist)) {
  if (!name.endsWith('.d.ts')) continue;
  const file = `${dist}/${name}`;
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
}
