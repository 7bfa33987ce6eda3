import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LockTimeoutError } from '../src/file-lock.ts';
import { createFileNonceGenerator } from '../src/nonce-file.ts';

const root = mkdtempSync(join(tmpdir(), 'dispersa-nonce-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(root, `case-${++n}`, 'nonce.state');
const T = 1_700_000_000_000;

describe('createFileNonceGenerator', () => {
  it('keeps going up across restarts even when the clock went back, and leaves no lock behind', async () => {
    const statePath = fresh();
    const first = createFileNonceGenerator({ statePath, now: () => T });
    const a = [await first.next(), await first.next(), await first.next()].map(BigInt);
    expect(a[1]).toBe((a[0] ?? 0n) + 1n);
    expect(readFileSync(statePath, 'utf8')).toBe(`${a[2]} ${T}\n`);
    expect(existsSync(`${statePath}.lock`)).toBe(false);

    const restarted = createFileNonceGenerator({ statePath, now: () => T - 3_600_000 });
    expect(BigInt(await restarted.next())).toBe((a[2] ?? 0n) + 1n);
  });

  it('queues concurrent callers in one process: all distinct, strictly increasing in call order', async () => {
    const generator = createFileNonceGenerator({ statePath: fresh(), fsync: false });
    const values = (await Promise.all(Array.from({ length: 50 }, () => generator.next()))).map(BigInt);
    for (let i = 1; i < values.length; i++) expect(values[i]).toBe((values[i - 1] ?? 0n) + 1n);
  });

  it('exclusive() holds the lock until its work is done: no other signer of the file takes a nonce meanwhile', async () => {
    const statePath = fresh();
    const a = createFileNonceGenerator({ statePath, fsync: false });
    const b = createFileNonceGenerator({ statePath, fsync: false });
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let tookNonce!: () => void;
    const holding = new Promise<void>((resolve) => {
      tookNonce = resolve;
    });
    const write = a.exclusive!(async (next) => {
      order.push(`write ${await next()}`);
      tookNonce();
      await held;
      order.push('write answered');
    });
    // b asks only once a holds the lock and its nonce (a guessed delay was outrun on a loaded machine).
    await holding;
    const read = b.next().then((value) => order.push(`read ${value}`));
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toHaveLength(1);
    release();
    await Promise.all([write, read]);
    expect(order[1]).toBe('write answered');
    expect(BigInt(order[2]!.split(' ')[1]!)).toBe(BigInt(order[0]!.split(' ')[1]!) + 1n);
    expect(existsSync(`${statePath}.lock`)).toBe(false);
  });

  it('keeps a lock held past staleMs fresh, so a waiting process does not break it', async () => {
    const statePath = fresh();
    // staleMs well above the event-loop delays of a loaded machine, the hold well past it.
    const a = createFileNonceGenerator({ statePath, fsync: false, staleLockMs: 400 });
    const b = createFileNonceGenerator({ statePath, fsync: false, staleLockMs: 400 });
    const order: string[] = [];
    let held!: () => void;
    const holding = new Promise<void>((r) => {
      held = r;
    });
    const write = a.exclusive!(async (next) => {
      await next();
      held();
      await new Promise((r) => setTimeout(r, 1_500));
      order.push('write answered');
    });
    // b asks only once a holds the lock (not after a guessed delay, which a loaded machine can outrun).
    await holding;
    await b.next();
    order.push('read');
    await write;
    expect(order).toEqual(['write answered', 'read']);
  });

  it('does not go backwards when the state file is deleted or replaced by an older copy', async () => {
    const statePath = fresh();
    const generator = createFileNonceGenerator({ statePath, now: () => T });
    await generator.next();
    const old = readFileSync(statePath, 'utf8');
    const second = BigInt(await generator.next());
    writeFileSync(statePath, old);
    expect(BigInt(await generator.next())).toBe(second + 1n);
    rmSync(statePath);
    expect(BigInt(await generator.next())).toBe(second + 2n);
  });

  it('refuses a state file that does not hold a nonce, and leaves it as it was', async () => {
    const statePath = fresh();
    const generator = createFileNonceGenerator({ statePath });
    await generator.next();
    writeFileSync(statePath, 'garbage\n');
    await expect(generator.next()).rejects.toThrow(/does not hold a nonce/);
    writeFileSync(statePath, '12 34 56\n');
    await expect(generator.next()).rejects.toThrow(/is not "<nonce> <ms>"/);
    expect(readFileSync(statePath, 'utf8')).toBe('12 34 56\n');
    expect(existsSync(`${statePath}.lock`)).toBe(false);
  });

  it('breaks a lock left by a crashed holder once it is older than staleLockMs', async () => {
    const statePath = fresh();
    const generator = createFileNonceGenerator({ statePath, staleLockMs: 1_000, maxWaitMs: 2_000 });
    await generator.next();
    writeFileSync(`${statePath}.lock`, '999999.dead\n');
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${statePath}.lock`, old, old);
    const started = Date.now();
    await generator.next();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(existsSync(`${statePath}.lock`)).toBe(false);
  });

  it('waits a bounded time for a live lock, then fails without issuing anything', async () => {
    const statePath = fresh();
    const generator = createFileNonceGenerator({ statePath, staleLockMs: 60_000, maxWaitMs: 200 });
    const issued = await generator.next();
    writeFileSync(`${statePath}.lock`, 'someone-else\n');
    const started = Date.now();
    await expect(generator.next()).rejects.toBeInstanceOf(LockTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(readFileSync(`${statePath}.lock`, 'utf8')).toBe('someone-else\n');
    // The holder lets go; the generator continues from where it was.
    rmSync(`${statePath}.lock`);
    expect(BigInt(await generator.next())).toBe(BigInt(issued) + 1n);
  });
});

describe('several processes sharing one state file', () => {
  const child = fileURLToPath(new URL('./support/nonce-child.ts', import.meta.url));

  function run(statePath: string, count: number, goPath: string) {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, statePath, String(count), goPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    const ready = new Promise<void>((resolve) => {
      proc.stderr.on('data', (chunk) => {
        stderr += chunk;
        if (stderr.includes('ready')) resolve();
      });
    });
    const done = new Promise<bigint[]>((resolve, reject) => {
      proc.on('exit', (code) => {
        if (code === 0) resolve(stdout.trim().split('\n').map(BigInt));
        else reject(new Error(`child exited ${code}: ${stderr}`));
      });
    });
    return { ready, done };
  }

  it('hands out strictly increasing, never repeated nonces to four processes drawing at once', async () => {
    const statePath = fresh();
    const goPath = join(root, `go-${n}`);
    const count = 150;
    const children = Array.from({ length: 4 }, () => run(statePath, count, goPath));
    await Promise.all(children.map((c) => c.ready));
    writeFileSync(goPath, '');
    const results = await Promise.all(children.map((c) => c.done));

    const all = results.flat();
    expect(all.length).toBe(4 * count);
    expect(new Set(all).size).toBe(all.length);
    for (const sequence of results) {
      for (let i = 1; i < sequence.length; i++) expect((sequence[i] ?? 0n) > (sequence[i - 1] ?? 0n)).toBe(true);
    }
    const sorted = [...all].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const min = sorted[0] ?? 0n;
    const max = sorted[sorted.length - 1] ?? 0n;
    // One shared sequence: the group's nonces are exactly the consecutive range, nothing skipped or doubled.
    expect(max - min + 1n).toBe(BigInt(all.length));
    expect(readFileSync(statePath, 'utf8').split(' ')[0]).toBe(max.toString());
    // The processes really competed: their values interleave instead of forming four blocks.
    const owner = new Map<bigint, number>();
    results.forEach((sequence, index) => {
      for (const value of sequence) owner.set(value, index);
    });
    let switches = 0;
    for (let i = 1; i < sorted.length; i++)
      if (owner.get(sorted[i] ?? 0n) !== owner.get(sorted[i - 1] ?? 0n)) switches++;
    expect(switches).toBeGreaterThan(3);
  }, 60_000);
});
