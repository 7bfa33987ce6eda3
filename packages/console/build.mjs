// Builds the operator console into dist/: one bundle (Preact and the pages, minified) and its stylesheet, served
// by the operator listener at /console/. Run by `npm run build`, which `npm start` and `npm test` run first.
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { build } from 'esbuild';

const root = new URL('./', import.meta.url);
const dist = new URL('dist/', root);
await rm(dist, { recursive: true, force: true });
await mkdir(new URL('assets/', dist), { recursive: true });
await build({
  entryPoints: [new URL('src/main.tsx', root).pathname],
  outfile: new URL('assets/console.js', dist).pathname,
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  logLevel: 'warning',
});
await copyFile(new URL('src/index.html', root), new URL('index.html', dist));
await copyFile(new URL('src/console.css', root), new URL('assets/console.css', dist));
console.log('console built into packages/console/dist');
