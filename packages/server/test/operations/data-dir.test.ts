import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir, secureDataDir } from '../../src/db/data-dir.ts';
import { BIN } from '../cli/cli-process.ts';
import { REPO, type ServiceProcess, startService } from './service-process.ts';

/**
 * Issue 13, items 4 and 5: the data directory is owner-only (0700 folders, 0600 files), and one process holds the
 * embedded database: a second `npm start` or `dispersa worker` on the same DISPERSA_DATA_DIR exits at once.
 */

const dirs: string[] = [];
const children: ServiceProcess[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dispersa-datadir-'));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** Every entry under dir with its mode bits. */
async function modesUnder(dir: string): Promise<{ path: string; dir: boolean; mode: number }[]> {
  const out: { path: string; dir: boolean; mode: number }[] = [];
  const info = await stat(dir);
  out.push({ path: dir, dir: true, mode: info.mode & 0o777 });
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isSymbolicLink()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const s = await stat(full);
    out.push({ path: full, dir: s.isDirectory(), mode: s.mode & 0o777 });
  }
  return out;
}

function serviceEnv(dataDir: string): Record<string, string> {
  return {
    DISPERSA_DATA_DIR: dataDir,
    DISPERSA_PORT: '0',
    DISPERSA_ADMIN_PORT: '0',
    DISPERSA_SANDBOX_SETTLE_MS: '0',
  };
}

describe('the data directory of a real process', () => {
  it('is owner-only, and a second process on it stops at once naming it', async () => {
    const dataDir = path.join(await tempDir(), 'data');
    const first = startService(serviceEnv(dataDir));
    children.push(first);
    await first.waitFor('stdout', /dispersa started/);

    const entries = await modesUnder(dataDir);
    // The embedded database alone is hundreds of files.
    expect(entries.length).toBeGreaterThan(100);
    const wrong = entries.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600));
    expect(wrong).toEqual([]);

    const second = startService(serviceEnv(dataDir));
    children.push(second);
    const began = Date.now();
    expect(await second.exited).toBe(2);
    expect(Date.now() - began).toBeLessThan(20_000);
    expect(second.stderr.join('\n')).toContain(`the data directory ${dataDir} is in use by another dispersa process`);
    expect(second.stderr.join('\n')).toContain(`pid ${first.child.pid}`);

    // `dispersa worker` is refused the same way.
    const worker = spawn(process.execPath, [BIN, 'worker'], {
      cwd: REPO,
      env: { PATH: process.env['PATH'], ...serviceEnv(dataDir) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let workerErr = '';
    worker.stderr.setEncoding('utf8').on('data', (c: string) => {
      workerErr += c;
    });
    const workerCode = await new Promise<number | null>((resolve) => worker.on('close', resolve));
    expect(workerCode).not.toBe(0);
    expect(workerErr).toContain(`the data directory ${dataDir} is in use`);

    // The first still serves, and after a SIGKILL the directory is free again: no stale lock.
    expect(first.child.exitCode).toBeNull();
    first.child.kill('SIGKILL');
    await first.exited;
    const third = startService(serviceEnv(dataDir));
    children.push(third);
    await third.waitFor('stdout', /dispersa started/);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
  }, 120_000);
});

describe('secureDataDir and lockDataDir', () => {
  it('tightens a directory left with wide modes by an older release', async () => {
    const dataDir = await tempDir();
    await mkdir(path.join(dataDir, 'db', 'base'), { recursive: true });
    await writeFile(path.join(dataDir, 'db', 'base', 'page'), 'x');
    await chmod(path.join(dataDir, 'db', 'base', 'page'), 0o666);
    await chmod(path.join(dataDir, 'db', 'base'), 0o777);
    await chmod(path.join(dataDir, 'db'), 0o755);
    await chmod(dataDir, 0o755);
    await secureDataDir(dataDir);
    const wrong = (await modesUnder(dataDir)).filter((e) => e.mode !== (e.dir ? 0o700 : 0o600));
    expect(wrong).toEqual([]);
  });

  it('gives a directory to one holder at a time, and back on release', async () => {
    const dataDir = await tempDir();
    const lock = await lockDataDir(dataDir);
    await expect(lockDataDir(dataDir)).rejects.toThrow(DataDirLockedError);
    // Another spelling of the same directory is the same directory.
    await expect(lockDataDir(`${dataDir}/./`)).rejects.toThrow(DataDirLockedError);
    await lock.release();
    const again = await lockDataDir(dataDir);
    await again.release();
  });
});
