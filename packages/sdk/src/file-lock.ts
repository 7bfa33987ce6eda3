import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * An exclusive lock between processes on one machine (or one shared file system), made of a lock file created
 * with open(..., 'wx'): the create fails with EEXIST while another holder has it, atomically, on every local
 * file system. The file holds a random token so a holder only ever removes its own lock.
 *
 * A holder that died leaves its file behind. A lock file older than `staleMs` is treated as abandoned: it is
 * renamed aside (only one waiter can rename a given file) and removed. Between our stat and the rename, the
 * abandoned lock may have been replaced by a fresh one; the renamed file's inode and mtime tell, and a fresh
 * lock moved by mistake is linked back (link never overwrites). Most critical sections are milliseconds long; one
 * that lasts longer (a write holding the nonce lock until its answer is in) keeps its lock file fresh by touching
 * it every `staleMs / 3`, so a live holder is never taken for a dead one.
 */
export interface FileLockOptions {
  /** Age (by mtime) after which a lock file is taken to be abandoned. */
  staleMs: number;
  /** How long to wait for the lock before giving up with an error. */
  maxWaitMs: number;
}

export class LockTimeoutError extends Error {
  constructor(
    readonly lockPath: string,
    readonly waitedMs: number,
  ) {
    super(`timed out after ${waitedMs} ms waiting for lock file ${lockPath}`);
    this.name = 'LockTimeoutError';
  }
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

async function tryCreate(lockPath: string, token: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(lockPath, 'wx');
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(`${token}\n`);
  } finally {
    await handle.close();
  }
  return true;
}

/** True when the lock path is free (or was freed) and creating it is worth trying again at once. */
async function breakIfStale(lockPath: string, staleMs: number, token: string): Promise<boolean> {
  let seen: Awaited<ReturnType<typeof stat>>;
  try {
    seen = await stat(lockPath);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return true;
    throw err;
  }
  if (Date.now() - seen.mtimeMs <= staleMs) return false;
  const aside = `${lockPath}.stale.${token}`;
  try {
    await rename(lockPath, aside);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return true;
    throw err;
  }
  const moved = await stat(aside);
  if (moved.ino !== seen.ino || moved.mtimeMs !== seen.mtimeMs) {
    // We moved a lock created after our stat: give it back unless someone already took the path.
    await link(aside, lockPath).catch(() => undefined);
    await unlink(aside).catch(() => undefined);
    return false;
  }
  await unlink(aside).catch(() => undefined);
  return true;
}

async function holds(lockPath: string, token: string): Promise<boolean> {
  try {
    return (await readFile(lockPath, 'utf8')).trim() === token;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Runs `fn` while holding the lock. `fn` receives `stillHeld()`, to check just before a write that nobody broke
 * the lock as stale meanwhile (only possible if `fn` ran longer than `staleMs`).
 */
export async function withFileLock<T>(
  lockPath: string,
  options: FileLockOptions,
  fn: (stillHeld: () => Promise<boolean>) => Promise<T>,
): Promise<T> {
  const token = `${process.pid}.${randomBytes(8).toString('hex')}`;
  const started = Date.now();
  let pause = 1;
  for (;;) {
    if (await tryCreate(lockPath, token)) break;
    if (await breakIfStale(lockPath, options.staleMs, token)) continue;
    const waited = Date.now() - started;
    if (waited >= options.maxWaitMs) throw new LockTimeoutError(lockPath, waited);
    // Short, growing, jittered pauses: holders keep the lock for milliseconds, and jitter stops lockstep.
    await delay(Math.min(pause + Math.random() * pause, options.maxWaitMs - waited));
    pause = Math.min(pause * 2, 20);
  }
  const heartbeat = setInterval(
    () => {
      void holds(lockPath, token)
        .then((mine) => {
          if (!mine) return;
          const now = new Date();
          return utimes(lockPath, now, now);
        })
        .catch(() => undefined);
    },
    Math.max(10, Math.floor(options.staleMs / 3)),
  );
  heartbeat.unref();
  try {
    return await fn(() => holds(lockPath, token));
  } finally {
    clearInterval(heartbeat);
    if (await holds(lockPath, token)) await unlink(lockPath).catch(() => undefined);
  }
}
