import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';

/**
 * The data directory holds the embedded database, the generated secrets and the sandbox demo keys: owner-only.
 * The process runs with umask 0o077 (main.ts), so everything it creates is 0600/0700; a directory left by an older
 * release with wider modes is tightened at start.
 *
 * The embedded database is a set of files PGlite reads once and writes back without any locking of its own: two
 * processes on one directory both serve, both hand out the same ids, and one overwrites the other's writes. So
 * the process that opens it holds a lock for its whole life, and a second one stops at once naming the directory.
 */

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;
export const PROCESS_UMASK = 0o077;

/** Creates the directory owner-only, and takes group and other rights off everything already in it. */
export async function secureDataDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
  await tighten(dir);
}

async function tighten(entry: string): Promise<void> {
  const info = await lstat(entry);
  if (info.isSymbolicLink()) return;
  if (info.isDirectory()) {
    if ((info.mode & 0o077) !== 0) await chmod(entry, info.mode & 0o700);
    for (const name of await readdir(entry)) await tighten(path.join(entry, name));
  } else if ((info.mode & 0o077) !== 0) {
    await chmod(entry, info.mode & 0o700);
  }
}

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    holder: string,
  ) {
    super(
      `the data directory ${dataDir} is in use by another dispersa process (${holder}); two processes on one embedded ` +
        'database overwrite each other. Stop the other process, give this one its own DISPERSA_DATA_DIR, or use DATABASE_URL',
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

const LOCK_FILE = 'dispersa.lock';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function holderOf(file: string): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    const { pid, host } = JSON.parse(text) as { pid?: number; host?: string };
    return `pid ${pid ?? '?'} on ${host ?? '?'}`;
  } catch {
    return 'unknown pid';
  }
}

/**
 * Linux: the lock is an abstract Unix socket named after the directory's real path. The kernel gives it to one
 * process only and takes it back when that process ends in any way (SIGKILL included), so a crash never leaves a
 * stale lock. Elsewhere: the lock file alone, created exclusively, taken over when the pid it names is gone.
 * Either way `<dataDir>/dispersa.lock` says which process holds the directory.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const real = await realpath(dataDir);
  const file = path.join(real, LOCK_FILE);
  const record = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`;
  if (process.platform === 'linux') {
    const name = `\0dispersa-data-dir-${createHash('sha256').update(real).digest('hex').slice(0, 40)}`;
    const server = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(name, () => resolve());
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
        throw new DataDirLockedError(dataDir, await holderOf(file));
      throw err;
    }
    server.unref();
    await writeRecord(file, record, 'w');
    return { release: () => releaseSocket(server, file) };
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await writeRecord(file, record, 'wx');
      return { release: () => rm(file, { force: true }) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST')
          throw new DataDirLockedError(dataDir, await holderOf(file));
        throw err;
      }
    }
    const text = await readFile(file, 'utf8').catch(() => '');
    let pid = 0;
    try {
      pid = Number((JSON.parse(text) as { pid?: number }).pid ?? 0);
    } catch {}
    if (pid > 0 && pidAlive(pid)) throw new DataDirLockedError(dataDir, await holderOf(file));
    await rm(file, { force: true });
  }
}

async function writeRecord(file: string, record: string, flag: 'w' | 'wx'): Promise<void> {
  const handle = await open(file, flag, DATA_FILE_MODE);
  try {
    await handle.writeFile(record);
  } finally {
    await handle.close();
  }
}

async function releaseSocket(server: Server, file: string): Promise<void> {
  await rm(file, { force: true });
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
