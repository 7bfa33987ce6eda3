import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../support/keys.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';
import { type CliClient, cliClient, PM_DESTINATION } from './cli-fixture.ts';
import { makeHome, runCli } from './cli-process.ts';

let server: TestServer;
let home: { home: string; remove(): Promise<void> };
let ves: CliClient;

beforeAll(async () => {
  server = await startTestServer();
  home = await makeHome();
  ves = await cliClient(server, home.home, { fundMinor: 100_000_000n });
});

afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

function fingerprintOf(keyIndex: number): string {
  const der = testKeyPair(keyIndex).publicKey.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('discovery and identity', () => {
  it('version needs no credentials', async () => {
    const r = await runCli(['version'], { env: { HOME: home.home, DISPERSA_BASE_URL: server.baseUrl } });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ apiVersion: 'v2', environment: 'sandbox', rails: ['PM', 'CCE'] });
  });

  it('me signs with the key file and shows the registered fingerprint', async () => {
    const r = await runCli(['me'], { env: ves.env });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.json()).toMatchObject({ environment: 'sandbox', publicKeyFingerprint: fingerprintOf(0) });
  });

  it('--pretty prints a table instead of JSON', async () => {
    const r = await runCli(['me', '--pretty'], { env: ves.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^publicKeyFingerprint\s+SHA256:/m);
    expect(r.stdout).toMatch(/^limits:$/m);
    expect(() => JSON.parse(r.stdout)).toThrow();
  });

  it('flags override the environment', async () => {
    const other = await cliClient(server, home.home, { keyIndex: 1 });
    const r = await runCli(
      ['me', '--api-key', other.apiKey, '--private-key-file', other.privateKeyFile, '--base-url', server.baseUrl],
      { env: { ...ves.env, DISPERSA_BASE_URL: 'http://127.0.0.1:9' } },
    );
    expect(r.code).toBe(0);
    expect(r.json().publicKeyFingerprint).toBe(fingerprintOf(1));
  });
});

describe('nonces across CLI runs', () => {
  it('keeps them in a state file per key (named by a hash, never the key) and never reuses one', async () => {
    const client = await cliClient(server, home.home);
    for (let i = 0; i < 4; i++) expect((await runCli(['me'], { env: client.env })).code).toBe(0);
    const dir = path.join(home.home, '.dispersa', 'nonces');
    const name = `${createHash('sha256').update(client.apiKey).digest('hex').slice(0, 32)}.nonce`;
    expect(await readdir(dir)).toContain(name);
    const [value] = (await readFile(path.join(dir, name), 'utf8')).trim().split(' ');
    expect(value).toMatch(/^[1-9][0-9]{15,37}$/);
    // Processes started together draw from the same file: none of them is refused as a replay.
    const together = await Promise.all(Array.from({ length: 6 }, () => runCli(['me'], { env: client.env })));
    expect(together.map((r) => [r.code, r.stderr])).toEqual(together.map(() => [0, '']));
    const [after] = (await readFile(path.join(dir, name), 'utf8')).trim().split(' ');
    expect(BigInt(after!) >= BigInt(value!) + 6n).toBe(true);
  });

  it('DISPERSA_NONCE_FILE puts the state where it says', async () => {
    const client = await cliClient(server, home.home);
    const file = path.join(home.home, 'custom', 'state.nonce');
    const r = await runCli(['me'], { env: { ...client.env, DISPERSA_NONCE_FILE: file } });
    expect(r.code).toBe(0);
    expect(await readFile(file, 'utf8')).toMatch(/^[1-9][0-9]+ [0-9]+\n$/);
  });
});

describe('failures and exit status', () => {
  it('exits 2 and sends nothing without credentials', async () => {
    const r = await runCli(['me'], { env: { HOME: home.home, DISPERSA_BASE_URL: server.baseUrl }, cwd: home.home });
    expect(r.code).toBe(2);
    expect(r.error().error).toMatch(/DISPERSA_API_KEY/);
    expect(r.stdout).toBe('');
  });

  it('exits 2 on an unknown flag, with the usage of the command', async () => {
    const r = await runCli(['pay', '--amount-minr', '100'], { env: ves.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage: dispersa pay/);
    expect(r.error()).toEqual({ error: 'unknown flag --amount-minr; did you mean --amount-minor?' });
    const short = await runCli(['pay', '--amount', '100'], { env: ves.env });
    expect(short.code).toBe(2);
    expect(short.error()).toEqual({ error: 'unknown flag --amount; did you mean --amount-minor?' });
  });

  it('exits 1 with the service error body and status when the signature does not verify', async () => {
    const wrongKey = path.join(home.home, 'wrong.pem');
    await writeFile(wrongKey, testKeyPair(2).privatePem);
    const r = await runCli(['me'], { env: { ...ves.env, DISPERSA_PRIVATE_KEY_FILE: wrongKey } });
    expect(r.code).toBe(1);
    expect(r.error()).toMatchObject({ status: 401, error: expect.any(String) });
    expect(r.stderr).toMatch(/DISPERSA_API_KEY and DISPERSA_PRIVATE_KEY_FILE/);
    expect(r.stdout).toBe('');
  });

  it('exits 2 when the key file holds no private key', async () => {
    const publicOnly = path.join(home.home, 'public.pem');
    await writeFile(publicOnly, testKeyPair(0).publicPem);
    const r = await runCli(['me'], { env: { ...ves.env, DISPERSA_PRIVATE_KEY_FILE: publicOnly } });
    expect(r.code).toBe(2);
    expect(r.error().error).toMatch(/private key/);
  });

  it('exits 3 when nothing answers, naming the setting that points it elsewhere', async () => {
    const port = await closedPort();
    const r = await runCli(['me'], { env: { ...ves.env, DISPERSA_BASE_URL: `http://127.0.0.1:${port}` } });
    expect(r.code).toBe(3);
    expect(r.error().error).toMatch(/ECONNREFUSED/);
    // The line for people names the setting that points the CLI elsewhere.
    expect(r.stderr).toMatch(/set DISPERSA_BASE_URL \(or --base-url\)/);
  });
});

describe('pay and payments', () => {
  it('pays an inline PM destination, printing the idempotency key it made up', async () => {
    const r = await runCli(['pay', '--amount-minor', '150000', ...PM_DESTINATION], { env: ves.env });
    expect(r.code).toBe(0);
    const payment = r.json();
    expect(payment).toMatchObject({ state: 'completed', amountMinor: '150000', currency: 'VES', rail: 'PM' });
    const key = UUID.exec(r.stderr)?.[0];
    expect(key).toBeDefined();
    expect(r.stderr).toContain(`--idempotency-key ${key}`);

    // The printed key is how to retry safely: the same payment comes back, not a second one.
    const again = await runCli(['pay', '--amount-minor', '150000', ...PM_DESTINATION, '--idempotency-key', key!], {
      env: ves.env,
    });
    expect(again.code).toBe(0);
    expect(again.json().intentId).toBe(payment.intentId);
    expect(again.stderr).not.toMatch(UUID);

    const changed = await runCli(['pay', '--amount-minor', '150100', ...PM_DESTINATION, '--idempotency-key', key!], {
      env: ves.env,
    });
    expect(changed.code).toBe(1);
    expect(changed.error().status).toBe(409);

    const read = await runCli(['payments', 'get', payment.intentId], { env: ves.env });
    expect(read.code).toBe(0);
    expect(read.json()).toEqual(payment);
  });

  it('warns never to pay again when the answer is unknown', async () => {
    const r = await runCli(['pay', '--amount-minor', '150002', ...PM_DESTINATION], { env: ves.env });
    expect(r.code).toBe(0);
    expect(r.json().state).toBe('unknown');
    expect(r.stderr).toMatch(/Do NOT pay again/);
    expect(r.stderr).toContain(`dispersa payments get ${r.json().intentId} --wait`);
  });

  it('a failed payment is a 2xx answer: exit 0 with state failed', async () => {
    const r = await runCli(['pay', '--amount-minor', '150005', ...PM_DESTINATION], { env: ves.env });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ state: 'failed', subStatus: 'wrong_beneficiary' });
  });

  it('a business-rule refusal (limits not configured) exits 1 with status 422', async () => {
    const unlimited = await cliClient(server, home.home, { limits: null, fundMinor: 1_000_000n });
    const r = await runCli(['pay', '--amount-minor', '150000', ...PM_DESTINATION], { env: unlimited.env });
    expect(r.code).toBe(1);
    expect(r.error().status).toBe(422);
  });

  it('refuses a payment with no destination before sending anything', async () => {
    const r = await runCli(['pay', '--amount-minor', '150000'], { env: ves.env });
    expect(r.code).toBe(2);
    expect(r.error().error).toMatch(/--beneficiary-id/);
  });

  it('a missing payment exits 1 with 404', async () => {
    const r = await runCli(['payments', 'get', 'pay_doesnotexist'], { env: ves.env });
    expect(r.code).toBe(1);
    expect(r.error().status).toBe(404);
  });

  it('payments get --wait returns at once for a final payment', async () => {
    const paid = (await runCli(['pay', '--amount-minor', '250000', ...PM_DESTINATION], { env: ves.env })).json();
    const r = await runCli(['payments', 'get', paid.intentId, '--wait', '--timeout-seconds', '5'], { env: ves.env });
    expect(r.code).toBe(0);
    expect(r.json().state).toBe('completed');
  });

  it('payments get --wait gives up on a payment that stays unknown, still telling not to pay again', async () => {
    const paid = (await runCli(['pay', '--amount-minor', '350002', ...PM_DESTINATION], { env: ves.env })).json();
    const started = Date.now();
    const r = await runCli(
      ['payments', 'get', paid.intentId, '--wait', '--timeout-seconds', '2', '--interval-ms', '300', '--progress'],
      { env: ves.env },
    );
    expect(r.code).toBe(0);
    expect(r.json().state).toBe('unknown');
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(r.stderr).toMatch(/still unknown; not final yet \(do not pay again\)/);
  });

  it('lists a page, or every page with --all and a progress count', async () => {
    const client = await cliClient(server, home.home, { fundMinor: 10_000_000n });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await runCli(['pay', '--amount-minor', String(100_000 + i * 100), ...PM_DESTINATION, '--quiet'], {
        env: client.env,
      });
      expect(r.stderr).toBe('');
      ids.unshift(r.json().intentId);
    }
    const page = await runCli(['payments', 'list', '--limit', '2'], { env: client.env });
    expect(page.code).toBe(0);
    expect(page.json()).toMatchObject({ hasMore: true, nextCursor: ids[1] });
    expect(page.json().data.map((p: { intentId: string }) => p.intentId)).toEqual(ids.slice(0, 2));

    const next = await runCli(['payments', 'list', '--limit', '2', '--cursor', ids[1]!], { env: client.env });
    expect(next.json().data.map((p: { intentId: string }) => p.intentId)).toEqual(ids.slice(2, 4));

    const all = await runCli(['payments', 'list', '--limit', '2', '--all', '--progress'], { env: client.env });
    expect(all.code).toBe(0);
    expect(all.json().map((p: { intentId: string }) => p.intentId)).toEqual(ids);
    expect(all.stderr).toMatch(/payments: 5 in 3 pages/);

    const pretty = await runCli(['payments', 'list', '--pretty'], { env: client.env });
    expect(pretty.stdout).toMatch(/^intentId\s+id\s+state/m);
    expect(pretty.stdout).toMatch(/end of list\n$/);

    const balance = await runCli(['balance'], { env: client.env });
    expect(balance.json()).toEqual({ currency: 'VES', availableMinor: String(10_000_000 - 5 * 100_000 - 1000) });
  });
});

describe('beneficiaries', () => {
  it('create, read, rename, list, pay by id, archive', async () => {
    const client = await cliClient(server, home.home, { fundMinor: 10_000_000n });
    const created = await runCli(
      ['beneficiaries', 'create', '--rail', 'PM', '--account', '04141234567', '--bank-code', '0102'].concat([
        '--doc-type',
        'V',
        '--doc-number',
        '12345678',
        '--alias',
        'mom',
      ]),
      { env: client.env },
    );
    expect(created.code).toBe(0);
    const b = created.json();
    expect(b).toMatchObject({ alias: 'mom', rail: 'PM', account: '04141234567', status: 'ACTIVE' });

    const duplicate = await runCli(
      ['beneficiaries', 'create', '--rail', 'PM', '--account', '04141234567', '--bank-code', '0102'].concat([
        '--doc-type',
        'V',
        '--doc-number',
        '12345678',
        '--alias',
        'again',
      ]),
      { env: client.env },
    );
    expect(duplicate.code).toBe(1);
    expect(duplicate.error().status).toBe(409);

    const renamed = await runCli(['beneficiaries', 'update', b.id, '--alias', 'mother'], { env: client.env });
    expect(renamed.json()).toMatchObject({ id: b.id, alias: 'mother' });
    expect((await runCli(['beneficiaries', 'get', b.id], { env: client.env })).json().alias).toBe('mother');
    const list = await runCli(['beneficiaries', 'list'], { env: client.env });
    expect(list.json().data.map((x: { id: string }) => x.id)).toEqual([b.id]);

    const paid = await runCli(['pay', '--amount-minor', '120000', '--beneficiary-id', b.id], { env: client.env });
    expect(paid.code).toBe(0);
    expect(paid.json()).toMatchObject({ state: 'completed', beneficiary: '04141234567' });

    const archived = await runCli(['beneficiaries', 'archive', b.id], { env: client.env });
    expect(archived.json()).toMatchObject({ id: b.id, status: 'INACTIVE' });
    const refused = await runCli(['pay', '--amount-minor', '120000', '--beneficiary-id', b.id], { env: client.env });
    expect(refused.code).toBe(1);
    expect(refused.error().status).toBe(404);
  });
});

describe('rates and quotes (USD balance)', () => {
  it('reads the rate, freezes a quote and pays with it', async () => {
    const usd = await cliClient(server, home.home, { currency: 'USD', fundMinor: 1_000_000n });
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    const published = await server.admin('POST', '/admin/v1/rates', {
      base: 'USD',
      rate: '40',
      expiresAt,
      clientId: usd.clientId,
    });
    expect(published.status).toBe(201);

    const rate = await runCli(['rate'], { env: usd.env });
    expect(rate.code).toBe(0);
    expect(rate.json()).toMatchObject({ base: 'USD', quote: 'VES', rate: '40.000000000000' });

    const quote = await runCli(['quote', '--amount-type', 'target', '--amount-minor', '400000'], { env: usd.env });
    expect(quote.code).toBe(0);
    expect(quote.json()).toMatchObject({
      amountType: 'TARGET',
      targetAmountMinor: '400000',
      sourceAmountMinor: '10000',
    });
    expect(quote.stderr).toMatch(/idempotency-key /);

    const paid = await runCli(
      ['pay', '--amount-minor', '400000', ...PM_DESTINATION, '--quote-id', quote.json().quoteId],
      { env: usd.env },
    );
    expect(paid.code).toBe(0);
    expect(paid.json().state).toBe('completed');
    expect((await runCli(['balance'], { env: usd.env })).json()).toEqual({ currency: 'USD', availableMinor: '990000' });

    const ves = await runCli(['rate'], { env: { ...usd.env, ...vesEnv() } });
    expect(ves.code).toBe(1);
    expect(ves.error().status).toBe(404);
  });
});

function vesEnv() {
  return { DISPERSA_API_KEY: ves.apiKey, DISPERSA_PRIVATE_KEY_FILE: ves.privateKeyFile };
}

describe('sandbox demo credentials', () => {
  it('falls back to the demo client of the data dir when no key is configured', async () => {
    const cwd = path.join(home.home, 'repo');
    const demoDir = path.join(cwd, '.dispersa', 'sandbox', 'demo');
    await mkdir(demoDir, { recursive: true });
    const demo = await cliClient(server, home.home, { keyIndex: 2 });
    const setup = {
      clients: [
        {
          name: 'Demo VES',
          clientId: demo.clientId,
          currency: 'VES',
          keyId: demo.keyId,
          apiKey: demo.apiKey,
          privateKeyFile: demo.privateKeyFile,
          publicKeyFingerprint: fingerprintOf(2),
        },
      ],
    };
    await writeFile(path.join(demoDir, 'credentials.json'), JSON.stringify(setup));
    const env = { HOME: home.home, DISPERSA_BASE_URL: server.baseUrl };
    const r = await runCli(['me'], { env, cwd });
    expect(r.code).toBe(0);
    expect(r.json().publicKeyFingerprint).toBe(fingerprintOf(2));
    expect(r.stderr).toMatch(/using sandbox demo client "Demo VES"/);

    const elsewhere = await runCli(['me'], {
      env: { ...env, DISPERSA_DATA_DIR: path.join(cwd, '.dispersa', 'sandbox') },
    });
    expect(elsewhere.code).toBe(0);

    const usd = await runCli(['me', '--demo', 'USD'], { env, cwd });
    expect(usd.code).toBe(2);
    expect(usd.error().error).toMatch(/no demo client in USD/);
  });
});
