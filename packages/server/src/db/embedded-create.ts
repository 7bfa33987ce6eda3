import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** Whether a directory already holds a database (PostgreSQL's own mark of a data directory). */
export function holdsDatabase(dir: string): boolean {
  return existsSync(path.join(dir, 'PG_VERSION'));
}

// Plain JavaScript, so that it runs the same under the build and under the test runner's TypeScript loader, which
// a worker thread does not inherit.
const CREATE = `const { workerData } = require('node:worker_threads');
const { PGlite } = require(workerData.pglite);
PGlite.create(workerData.dir).then((db) => db.close());`;

/**
 * Creates a new database in `dir` in a worker thread of its own, which exits when it is done. Creating one (PGlite's
 * initdb) leaves a few hundred MB behind that only a full collection of V8 gives back: made in the service's own
 * thread, a first start held 800-890 MB where a restart on the same directory holds about 470 (docs/performance-log.md,
 * "Seventeenth session"). A worker's memory goes with it; the service then opens the directory as a restart would.
 */
export function createDatabaseApart(dir: string): Promise<void> {
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  return new Promise((resolve, reject) => {
    let failure: unknown = null;
    const worker = new Worker(CREATE, { eval: true, workerData: { pglite, dir } });
    worker.once('error', (err) => {
      failure = err;
    });
    worker.once('exit', (code) => {
      if (failure !== null) reject(failure);
      else if (code !== 0) reject(new Error(`creating the embedded database in ${dir} ended with code ${code}`));
      else if (!holdsDatabase(dir)) reject(new Error(`creating the embedded database in ${dir} left no database`));
      else resolve();
    });
  });
}
