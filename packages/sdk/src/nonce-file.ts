import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { withFileLock } from './file-lock.ts';
import { DEFAULT_RESEED_AFTER_MS, type NonceGenerator, type NonceState, nextNonce, parseNonce } from './nonce.ts';

export interface FileNonceOptions {
  /** File holding the last issued nonce as decimal text; created on first use. Share it between processes. */
  statePath: string;
  /** Lock file guarding the state file; defaults to `${statePath}.lock`. */
  lockPath?: string;
  /** Age after which a leftover lock file (a holder that crashed) is broken; default 5 s. */
  staleLockMs?: number;
  /** How long next() waits for the lock before it throws LockTimeoutError; default 65 s: longer than a write
   * may hold it (from its nonce to its answer, the client's 30 s timeout per attempt) and than a crashed holder's
   * lock takes to go stale. */
  maxWaitMs?: number;
  /** fsync the state file before it replaces the old one; default true. */
  fsync?: boolean;
  /** Pause (since the last nonce issued by any process) after which the clock floor applies again; 1 s. */
  reseedAfterMs?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

/**
 * A nonce generator whose `last` lives in a state file, for several processes (or restarts) signing with one
 * key. The file holds one line, "<last nonce> <ms when issued>". Each next() takes the lock file, reads the line,
 * computes the next nonce by the rule of nonce.ts (the clock floor applies only after the whole group of
 * processes was quiet, so a busy group hands out consecutive numbers), writes it to a temporary file and
 * renames that over the state file, then releases the lock. The rename makes the update atomic: a crash leaves the old or the new value, never a torn one, and readers never see a partial
 * write. Inside one process, calls are queued so they do not compete for the lock file with each other, and the
 * process also remembers its own last value, so even a deleted state file cannot make it go backwards.
 *
 * A state file that holds something other than a nonce makes next() throw: guessing past it could strand the
 * key (a too-low guess is refused as a replay, a too-high one raises the server's mark for good).
 */
export function createFileNonceGenerator(options: FileNonceOptions): NonceGenerator {
  const statePath = options.statePath;
  const lockPath = options.lockPath ?? `${statePath}.lock`;
  const lockOptions = { staleMs: options.staleLockMs ?? 5_000, maxWaitMs: options.maxWaitMs ?? 65_000 };
  const fsync = options.fsync ?? true;
  const now = options.now ?? Date.now;
  const reseedAfterMs = options.reseedAfterMs ?? DEFAULT_RESEED_AFTER_MS;
  let ownLast: NonceState | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let dirReady: Promise<unknown> | null = null;

  async function readLast(): Promise<NonceState | null> {
    let text: string;
    try {
      text = await readFile(statePath, 'utf8');
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return null;
      throw err;
    }
    const [valueText = '', atText, ...rest] = text.trim().split(/\s+/);
    const source = `nonce state file ${statePath}`;
    const value = parseNonce(valueText, source);
    if (value === null) return null;
    if (rest.length > 0 || (atText !== undefined && !/^[0-9]{1,16}$/.test(atText))) {
      throw new Error(`${source} is not "<nonce> <ms>": ${text.trim().slice(0, 80)}`);
    }
    return { value, issuedAtMs: atText === undefined ? null : Number(atText) };
  }

  async function writeLast(state: NonceState): Promise<void> {
    const temporary = `${statePath}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(`${state.value.toString(10)} ${Math.max(0, Math.floor(state.issuedAtMs ?? 0))}\n`);
      if (fsync) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, statePath);
  }

  /** The next nonce; the caller holds the lock. */
  async function advanceLocked(stillHeld: () => Promise<boolean>): Promise<string> {
    const stored = await readLast();
    // Our own last value guards against a state file deleted or replaced by an older copy.
    const last = stored === null || (ownLast !== null && ownLast.value > stored.value) ? ownLast : stored;
    const next = nextNonce(now(), last, reseedAfterMs);
    if (!(await stillHeld())) {
      throw new Error(`nonce lock ${lockPath} was broken as stale while held; nothing was issued, try again`);
    }
    await writeLast(next);
    ownLast = next;
    return next.value.toString(10);
  }

  async function locked<T>(fn: (stillHeld: () => Promise<boolean>) => Promise<T>): Promise<T> {
    dirReady ??= mkdir(dirname(statePath), { recursive: true });
    await dirReady;
    return withFileLock(lockPath, lockOptions, fn);
  }

  /** Inside one process, calls are queued so they do not compete for the lock file with each other. */
  function queued<T>(task: () => Promise<T>): Promise<T> {
    const run = queue.then(task);
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    next() {
      return queued(() => locked(advanceLocked));
    },
    exclusive(fn) {
      // The lock stays held (and kept fresh, see withFileLock) until fn settles: a write's nonce, its request and
      // its answer, so that no process sharing the file takes a nonce in between.
      return queued(() => locked((stillHeld) => fn(() => advanceLocked(stillHeld))));
    },
  };
}
