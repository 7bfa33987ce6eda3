import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHome, runCli, startCli } from './cli-process.ts';

let home: { home: string; remove(): Promise<void> };
beforeAll(async () => {
  home = await makeHome();
});
afterAll(async () => {
  await home?.remove();
});

const env = () => ({ HOME: home.home });

describe('help and version', () => {
  it('lists every group of commands', async () => {
    const r = await runCli(['--help'], { env: env() });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Client commands/m);
    expect(r.stdout).toMatch(/^Operator commands/m);
    expect(r.stdout).toMatch(/^ {2}pay {2,}/m);
    expect(r.stdout).toMatch(/^ {2}admin payments resolve <id> {2,}/m);
  });

  it('shows the flags of one command, both ways', async () => {
    const a = await runCli(['pay', '--help'], { env: env() });
    const b = await runCli(['help', 'pay'], { env: env() });
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    expect(a.stdout).toMatch(/^Usage: dispersa pay \[flags\]/);
    expect(a.stdout).toMatch(/--idempotency-key K/);
    expect(a.stdout).toMatch(/--private-key-file FILE/);
  });

  it('prints the release', async () => {
    const r = await runCli(['--version'], { env: env() });
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(r.json()).toEqual({ dispersa: pkg.version });
  });

  it('exits 2 on an unknown command', async () => {
    const r = await runCli(['payments', 'delete', 'x'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.error()).toEqual({ error: 'unknown command "payments delete x"' });
  });

  it('prints errors as text with --pretty', async () => {
    const r = await runCli(['payments', 'get', '--pretty'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: missing <id>$/m);
  });
});

describe('keygen', () => {
  it('writes a private key only its owner can read, and never overwrites one', async () => {
    const dir = path.join(home.home, 'keys');
    const r = await runCli(['keygen', '--out-dir', dir], { env: env() });
    expect(r.code).toBe(0);
    const out = r.json();
    expect(out.privateKeyFile).toBe(path.join(dir, 'dispersa-private.pem'));
    expect(out.publicKeyFingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect((await stat(out.privateKeyFile)).mode & 0o077).toBe(0);
    expect(await readFile(out.publicKeyFile, 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const again = await runCli(['keygen', '--out-dir', dir], { env: env() });
    expect(again.code).toBe(2);
    expect(again.error().error).toMatch(/exists/);
    expect((await runCli(['keygen', '--bits', '1024'], { env: env(), cwd: home.home })).code).toBe(2);
  });
});

describe('service processes', () => {
  it('bank-sim runs the simulator from BANK_SIM_* and stops on SIGTERM', async () => {
    const sim = startCli(['bank-sim'], {
      env: { ...env(), BANK_SIM_KEY_ID: 'gw1', BANK_SIM_SECRET: 's'.repeat(32), BANK_SIM_PORT: '0' },
    });
    const line = await sim.waitFor('stdout', /bankSim/);
    const { bankSim } = JSON.parse(line) as { bankSim: string };
    expect(bankSim).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Unsigned requests are refused by the simulator: it is up and checking.
    const res = await fetch(`${bankSim}/v1/transfers`, { method: 'POST', body: '{}' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await sim.stop()).toBe(0);
  });

  it('bank-sim names the missing variable', async () => {
    const r = await runCli(['bank-sim'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.error().error).toMatch(/^BANK_SIM_KEY_ID/);
  });

  it('worker names a bad configuration variable and exits 2', async () => {
    const r = await runCli(['worker'], { env: { ...env(), DISPERSA_QUOTE_TTL_SECONDS: 'soon' } });
    expect(r.code).toBe(2);
    expect(r.error().error).toMatch(/DISPERSA_QUOTE_TTL_SECONDS/);
  });

  it('worker runs the background loops on the configured database and stops cleanly', async () => {
    const dataDir = path.join(home.home, 'worker-data');
    const w = startCli(['worker'], { env: { ...env(), DISPERSA_DATA_DIR: dataDir, DISPERSA_LOG_LEVEL: 'warn' } });
    await w.waitFor('stderr', /workers running \(sandbox, embedded database\)/);
    // It migrated the embedded database in the data dir and created the webhook master key there.
    expect((await stat(path.join(dataDir, 'db'))).isDirectory()).toBe(true);
    expect(await w.stop()).toBe(0);
  });
});
