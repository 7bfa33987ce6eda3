import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../support/test-server.ts';
import { adminEnv, type CliClient, cliClient, PM_DESTINATION } from './cli-fixture.ts';
import { makeHome, runCli } from './cli-process.ts';

let server: TestServer;
let home: { home: string; remove(): Promise<void> };
let admin: Record<string, string | undefined>;

beforeAll(async () => {
  server = await startTestServer();
  home = await makeHome();
  admin = adminEnv(server, home.home);
});

afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

/** Operator routes that are still being built answer 404 from the router; their tests wait for them. */
function adminRoute(method: string, url: string): boolean {
  return server.running.adminApp.hasRoute({ method: method as 'GET', url });
}

async function ok(args: string[], env = admin, cwd?: string) {
  const r = await runCli(args, { env, ...(cwd === undefined ? {} : { cwd }) });
  if (r.code !== 0) throw new Error(`dispersa ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.json();
}

describe('operator token', () => {
  it('is read from the sandbox data dir when not configured, and a wrong one exits 1 with 401', async () => {
    const cwd = path.join(home.home, 'repo');
    await mkdir(path.join(cwd, '.dispersa', 'sandbox'), { recursive: true });
    const env = { HOME: home.home, DISPERSA_ADMIN_URL: server.adminUrl };
    const none = await runCli(['admin', 'clients', 'create', '--name', 'x', '--currency', 'VES'], { env, cwd });
    expect(none.code).toBe(2);
    expect(none.error().error).toMatch(/DISPERSA_ADMIN_TOKEN/);

    await writeFile(path.join(cwd, '.dispersa', 'sandbox', 'admin-token'), `${ADMIN_TOKEN}\n`);
    const created = await ok(['admin', 'clients', 'create', '--name', 'Acme', '--currency', 'VES'], env, cwd);
    expect(created).toMatchObject({ name: 'Acme', currency: 'VES', clientId: expect.any(String) });

    const wrong = await runCli(['admin', 'clients', 'get', created.clientId], {
      env: { ...env, DISPERSA_ADMIN_TOKEN: 'not-the-token-0123456789' },
      cwd,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.error().status).toBe(401);
  });
});

describe('onboarding a client with the CLI alone', () => {
  it('keygen, client, key, limits, funding, then the client pays; deactivation locks the key out', async () => {
    const keys = await ok(['keygen', '--out-dir', path.join(home.home, 'keys'), '--name', 'acme']);
    expect(await readFile(keys.privateKeyFile, 'utf8')).toMatch(/BEGIN PRIVATE KEY/);
    const client = await ok(['admin', 'clients', 'create', '--name', 'Acme', '--currency', 'VES']);
    const key = await runCli(['admin', 'keys', 'create', client.clientId, '--public-key-file', keys.publicKeyFile], {
      env: admin,
    });
    expect(key.code).toBe(0);
    expect(key.json()).toMatchObject({ apiKey: expect.stringMatching(/^sk_test_/), limitsConfigured: false });
    expect(key.json().publicKeyFingerprint).toBe(keys.publicKeyFingerprint);
    expect(key.stderr).toMatch(/shown only now/);
    const { keyId, apiKey } = key.json();

    const limits = await ok(['admin', 'limits', 'set', keyId, '--limit', 'PM:5000000:50000000', '--limit', 'cce:1:2']);
    expect(limits).toMatchObject({ keyId, limitsConfigured: true });

    const funding = await ok([
      'admin',
      'fundings',
      'create',
      client.clientId,
      '--amount-minor',
      '2000000',
      '--reference',
      'wire-1',
    ]);
    expect(funding).toMatchObject({ amountMinor: '2000000', currency: 'VES', reference: 'wire-1' });

    const env = {
      HOME: home.home,
      DISPERSA_BASE_URL: server.baseUrl,
      DISPERSA_API_KEY: apiKey,
      DISPERSA_PRIVATE_KEY_FILE: keys.privateKeyFile,
    };
    expect((await ok(['me'], env)).limitsConfigured).toBe(true);
    const paid = await ok(['pay', '--amount-minor', '150000', ...PM_DESTINATION], env);
    expect(paid.state).toBe('completed');

    const view = await ok(['admin', 'clients', 'get', client.clientId]);
    expect(view.balance).toEqual({ currency: 'VES', availableMinor: '1850000' });
    expect(view.keys.map((k: { keyId: string }) => k.keyId)).toEqual([keyId]);
    const listed = await ok(['admin', 'payments', 'list', '--client-id', client.clientId]);
    expect(listed.data.map((p: { intentId: string }) => p.intentId)).toEqual([paid.intentId]);

    await ok(['admin', 'keys', 'deactivate', keyId]);
    const locked = await runCli(['me'], { env });
    expect(locked.code).toBe(1);
    expect(locked.error().status).toBe(401);
  });

  it('refuses malformed operator input before sending it', async () => {
    const badLimit = await runCli(['admin', 'limits', 'set', 'key_x', '--limit', 'PM:5000'], { env: admin });
    expect(badLimit.code).toBe(2);
    expect(badLimit.error().error).toMatch(/RAIL:PER_PAYMENT_MAX_MINOR:DAILY_MAX_MINOR/);
    const noExpiry = await runCli(['admin', 'rates', 'publish', '--base', 'USD', '--rate', '40'], { env: admin });
    expect(noExpiry.code).toBe(2);
    const badAmount = await runCli(
      ['admin', 'fundings', 'create', 'cli_x', '--amount-minor', '10.50', '--reference', 'r'],
      { env: admin },
    );
    expect(badAmount.code).toBe(2);
    const unknownClient = await runCli(['admin', 'clients', 'get', 'cli_nope'], { env: admin });
    expect(unknownClient.code).toBe(1);
    expect(unknownClient.error().status).toBe(404);
  });
});

describe('rates', () => {
  it('publishes a rate for a while and lists the publications', async () => {
    const published = await ok([
      'admin',
      'rates',
      'publish',
      '--base',
      'eur',
      '--rate',
      '41.25',
      '--expires-in-seconds',
      '600',
    ]);
    expect(published).toMatchObject({ base: 'EUR', quote: 'VES', rate: '41.250000000000' });
    const expiresIn = Date.parse(published.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(590_000);
    expect(expiresIn).toBeLessThanOrEqual(600_000);
    const listed = await ok(['admin', 'rates', 'list', '--base', 'EUR']);
    expect(listed.data.map((r: { rateId: string }) => r.rateId)).toContain(published.rateId);
  });
});

describe('unknown payments', () => {
  let client: CliClient;
  beforeAll(async () => {
    client = await cliClient(server, home.home, { fundMinor: 10_000_000n });
  });

  it('are listed by state and resolved by hand; resolving a final one is a 409', async () => {
    const unknown = await ok(['pay', '--amount-minor', '150002', ...PM_DESTINATION, '--quiet'], client.env);
    expect(unknown.state).toBe('unknown');
    const listed = await ok(['admin', 'payments', 'list', '--state', 'unknown', '--client-id', client.clientId]);
    expect(listed.data.map((p: { intentId: string }) => p.intentId)).toEqual([unknown.intentId]);

    await ok(['admin', 'payments', 'resolve', unknown.intentId, '--outcome', 'failed', '--note', 'bank: not paid']);
    expect((await ok(['payments', 'get', unknown.intentId], client.env)).state).toBe('failed');

    const again = await runCli(
      ['admin', 'payments', 'resolve', unknown.intentId, '--outcome', 'completed', '--note', 'x'],
      { env: admin },
    );
    expect(again.code).toBe(1);
    expect(again.error().status).toBe(409);
    const bad = await runCli(['admin', 'payments', 'resolve', unknown.intentId, '--outcome', 'maybe', '--note', 'x'], {
      env: admin,
    });
    expect(bad.code).toBe(2);
  });
});

describe('sandbox bank statement', () => {
  it('books lines and duplicates, lists them, and suppresses a debit', async () => {
    const line = await ok([
      'admin',
      'statements',
      'add-line',
      '--direction',
      'credit',
      '--amount-minor',
      '777700',
      '--reference',
      'unfunded-1',
    ]);
    expect(line).toMatchObject({ direction: 'credit', amountMinor: '777700', reference: 'unfunded-1' });
    const copy = await ok(['admin', 'statements', 'add-line', '--duplicate-of', line.bankLineId]);
    expect(copy).toMatchObject({ duplicateOf: line.bankLineId, raw: line.raw });
    const lines = await ok(['admin', 'statements', 'lines']);
    expect(lines.data.map((l: { bankLineId: string }) => l.bankLineId)).toEqual(
      expect.arrayContaining([line.bankLineId, copy.bankLineId]),
    );
    const suppressed = await runCli(['admin', 'statements', 'suppress-debit', 'pay_future'], { env: admin });
    expect(suppressed.code).toBe(0);
  });

  it('import refuses a broken statement file with its line number before sending it', async () => {
    const file = path.join(home.home, 'broken.csv');
    await writeFile(file, 'this is not,a statement\n1,2\n');
    const r = await runCli(['admin', 'statements', 'import', file], { env: admin });
    expect(r.code).toBe(2);
    expect(r.error().error).toContain(file);
  });

  it('import sends a parsed statement', async (ctx) => {
    if (!adminRoute('POST', '/admin/v1/reconciliation/statements')) ctx.skip();
    const sample = path.join(import.meta.dirname, '..', 'fixtures', 'statement-sample.csv');
    const r = await runCli(['admin', 'statements', 'import', sample, '--progress'], { env: admin });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/lines sent/);
  });
});

describe('webhooks', () => {
  it('rotates and retires signing keys, reads deliveries and a client config', async () => {
    const before = await ok(['admin', 'webhooks', 'keys']);
    const rotated = await ok(['admin', 'webhooks', 'rotate-key']);
    expect(rotated).toMatchObject({ kid: expect.any(String), previousKid: expect.any(String) });
    const after = await ok(['admin', 'webhooks', 'keys']);
    expect(after.keys.length).toBe(before.keys.length + 1);
    const activeRetire = await runCli(['admin', 'webhooks', 'retire-key', rotated.kid], { env: admin });
    expect(activeRetire.code).toBe(1);
    expect(activeRetire.error().status).toBe(409);
    expect(await ok(['admin', 'webhooks', 'retire-key', rotated.previousKid])).toMatchObject({ status: 'retired' });

    const deliveries = await ok(['admin', 'webhooks', 'deliveries', '--limit', '5']);
    expect(deliveries).toMatchObject({ data: expect.any(Array), hasMore: expect.any(Boolean) });
    const client = await cliClient(server, home.home);
    expect(await ok(['admin', 'webhooks', 'client', client.clientId])).toMatchObject({
      clientId: client.clientId,
      webhookUrl: null,
    });
    const missing = await runCli(['admin', 'webhooks', 'redeliver', 'evt_nope'], { env: admin });
    expect(missing.code).toBe(1);
    expect(missing.error().status).toBe(404);
  });
});

describe('reconciliation', () => {
  it('an unfunded bank credit becomes an exception, which an operator lists, reads and resolves', async (ctx) => {
    if (!adminRoute('GET', '/admin/v1/reconciliation/exceptions')) ctx.skip();
    const reference = `stray-${Date.now()}`;
    await ok([
      'admin',
      'statements',
      'add-line',
      '--direction',
      'credit',
      '--amount-minor',
      '4200',
      '--reference',
      reference,
    ]);
    // Reconciliation runs in the background; give it a bounded while to ingest the line.
    let found: { id: string; kind: string; status: string } | undefined;
    for (let i = 0; i < 60 && found === undefined; i++) {
      const open = await ok(['admin', 'exceptions', 'list', '--status', 'open', '--kind', 'unfunded_credit', '--all']);
      found = open.find((e: { bankLines: { reference: string }[] }) =>
        e.bankLines.some((l) => l.reference === reference),
      );
      if (found === undefined) await new Promise((r) => setTimeout(r, 500));
    }
    expect(found, 'no unfunded_credit exception for the stray credit').toBeDefined();
    expect(await ok(['admin', 'exceptions', 'get', found!.id])).toMatchObject({ id: found!.id, status: 'open' });
    const resolved = await ok([
      'admin',
      'exceptions',
      'resolve',
      found!.id,
      '--note',
      'refunded',
      '--resolved-by',
      'ops',
    ]);
    expect(resolved).toMatchObject({ id: found!.id, status: 'resolved' });
    const again = await runCli(['admin', 'exceptions', 'resolve', found!.id, '--note', 'x'], { env: admin });
    expect(again.code).toBe(1);
    expect(again.error().status).toBe(409);
    const status = await ok(['admin', 'reconciliation', 'status']);
    expect(status).toMatchObject({ sources: expect.any(Array), balances: expect.any(Array) });
  });
});
