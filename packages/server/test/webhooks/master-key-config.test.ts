import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, startService } from '../operations/service-process.ts';
import { createTestDatabaseUrl, usingPostgres } from '../support/test-db.ts';

/**
 * Issue 13, item 7: the key sealing the webhook signing keys is configuration (DISPERSA_MASTER_KEY_FILE or
 * DISPERSA_MASTER_KEY), not a file that happens to sit in one data directory. Processes with different data
 * directories on one database, given the same key, serve the same JWKS; a key that cannot open the stored keys
 * stops the start naming the variable; production does not start without one.
 */

let root: string;
let database: { url: string; drop: () => Promise<void> } | null = null;
const children: ServiceProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'dispersa-master-key-'));
  if (usingPostgres()) database = await createTestDatabaseUrl();
});
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  await database?.drop();
  await rm(root, { recursive: true, force: true });
});

function start(dataDir: string, env: Record<string, string>): ServiceProcess {
  const child = startService({
    DISPERSA_DATA_DIR: path.join(root, dataDir),
    DISPERSA_PORT: '0',
    DISPERSA_ADMIN_PORT: '0',
    DISPERSA_ADMIN_TOKEN: 'master-key-test-admin-token',
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...env,
  });
  children.push(child);
  return child;
}

async function jwksOf(s: ServiceProcess): Promise<unknown> {
  const line = JSON.parse(await s.waitFor('stdout', /"dispersa started"/)) as { baseUrl: string };
  const res = await fetch(`${line.baseUrl}/v2/webhook/keys`);
  expect(res.status).toBe(200);
  return res.json();
}

async function stop(s: ServiceProcess): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

describe('the webhook master key as configuration', () => {
  const key = randomBytes(32).toString('base64');

  it('a key from the file or the value opens the same sealed keys; another key stops the start naming its variable', async () => {
    const keyFile = path.join(root, 'master.key');
    await writeFile(keyFile, `${key}\n`, { mode: 0o600 });

    // On PostgreSQL each process has its own data directory, as two nodes would; the embedded database belongs to
    // one directory, so there the processes take turns on it.
    const first = start('node-a', { DISPERSA_MASTER_KEY_FILE: keyFile });
    const jwks = await jwksOf(first);
    expect((jwks as { keys: unknown[] }).keys).toHaveLength(1);
    if (!database) await stop(first);

    const second = start(database ? 'node-b' : 'node-a', { DISPERSA_MASTER_KEY: key });
    expect(await jwksOf(second)).toEqual(jwks);
    await stop(second);
    if (database) await stop(first);

    const wrong = start(database ? 'node-c' : 'node-a', { DISPERSA_MASTER_KEY: randomBytes(32).toString('base64') });
    expect(await wrong.exited).toBe(2);
    const message = wrong.stderr.join('\n');
    expect(message).toContain('DISPERSA_MASTER_KEY cannot open the webhook signing keys stored in the database');
    expect(message).not.toContain(key);

    const otherFile = path.join(root, 'other.key');
    await writeFile(otherFile, randomBytes(32).toString('base64'), { mode: 0o600 });
    const wrongFile = start(database ? 'node-d' : 'node-a', { DISPERSA_MASTER_KEY_FILE: otherFile });
    expect(await wrongFile.exited).toBe(2);
    expect(wrongFile.stderr.join('\n')).toContain(`DISPERSA_MASTER_KEY_FILE (${otherFile}) cannot open`);
  }, 120_000);

  it('a key file that cannot be read, or holds no 32-byte key, stops the start naming it', async () => {
    const missing = path.join(root, 'nowhere.key');
    const gone = start('node-e', { DISPERSA_MASTER_KEY_FILE: missing });
    expect(await gone.exited).toBe(2);
    expect(gone.stderr.join('\n')).toContain(`DISPERSA_MASTER_KEY_FILE (${missing}): cannot read the file (ENOENT)`);

    const shortFile = path.join(root, 'short.key');
    await writeFile(shortFile, randomBytes(16).toString('base64'));
    const short = start('node-f', { DISPERSA_MASTER_KEY_FILE: shortFile });
    expect(await short.exited).toBe(2);
    expect(short.stderr.join('\n')).toContain(`DISPERSA_MASTER_KEY_FILE (${shortFile}): must hold 32 bytes`);
  }, 60_000);

  it('production does not start without one', async () => {
    const prod = start('node-g', { DISPERSA_ENV: 'production', DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true' });
    expect(await prod.exited).toBe(2);
    expect(prod.stderr.join('\n')).toContain('DISPERSA_MASTER_KEY_FILE: is required in production');
  });
});
