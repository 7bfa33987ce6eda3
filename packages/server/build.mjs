// Compiles the service (src/, without the CLI) to plain JavaScript in dist/, beside src/ so that the paths the code
// resolves from its own location (../package.json, ./migrations/, the console's dist/) hold in both. `npm start` runs
// dist/main.js with plain node: compiling on the fly (tsx) keeps a loader thread with its own heap and every module's
// source twice, ~70 MB of the process's memory. Types are checked by `npm run check`, not here.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const here = (p) => new URL(p, import.meta.url);
rmSync(here('./dist/'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', here('./tsconfig.build.json').pathname], { stdio: 'inherit' });
// The one kind of file the service reads from beside its code: the numbered SQL migrations.
mkdirSync(here('./dist/db/migrations/'), { recursive: true });
for (const name of readdirSync(here('./src/db/migrations/'))) {
  if (name.endsWith('.sql')) cpSync(here(`./src/db/migrations/${name}`), here(`./dist/db/migrations/${name}`));
}
