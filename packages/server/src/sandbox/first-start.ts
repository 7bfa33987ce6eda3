import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parsePublicKeyPem } from '../auth/public-key.ts';
import { countClients, createClient } from '../clients/service.ts';
import type { AppContext } from '../context.ts';
import { setKeyLimits } from '../limits/service.ts';

/**
 * Sandbox first start (operator contract, section 3): with no client in the database, seed a VES and a USD demo
 * client, each with an RSA key pair (private key written under the data dir), limits on every enabled rail, a
 * funded balance and, for USD, a rate in force. The credentials are kept in the data dir so later starts can
 * print them again (they are sandbox demo keys: no real money behind them).
 */

export interface DemoClient {
  name: string;
  clientId: string;
  currency: string;
  keyId: string;
  apiKey: string;
  privateKeyFile: string;
  publicKeyFingerprint: string;
}

export interface DemoSetup {
  clients: DemoClient[];
  /**
   * Where the sandbox that made these credentials listens, rewritten at every start (DISPERSA_PORT may change),
   * so that the CLI with no configuration calls the right address.
   */
  baseUrl?: string;
  adminUrl?: string;
}

export interface SeedHooks {
  /** Credits the demo balance (money-core ledger). */
  fund?: (clientId: string, amountMinor: bigint, reference: string) => Promise<void>;
  /** Makes sure a USD/VES rate is in force (fx). */
  ensureRate?: (base: string) => Promise<void>;
}

const DEMOS = [
  { name: 'Demo VES', slug: 'demo-ves', currency: 'VES', funding: 100_000_000_00n },
  { name: 'Demo USD', slug: 'demo-usd', currency: 'USD', funding: 1_000_000_00n },
] as const;

const DEMO_LIMITS = { perPaymentMaxMinor: 50_000_000_00n, dailyMaxMinor: 500_000_000_00n };

function credentialsFile(dataDir: string): string {
  return path.join(dataDir, 'demo', 'credentials.json');
}

export async function loadDemoSetup(dataDir: string): Promise<DemoSetup | null> {
  try {
    return JSON.parse(await readFile(credentialsFile(dataDir), 'utf8')) as DemoSetup;
  } catch {
    return null;
  }
}

export async function seedSandboxIfEmpty(ctx: AppContext, hooks: SeedHooks): Promise<DemoSetup | null> {
  if (ctx.config.env !== 'sandbox') return null;
  if ((await countClients(ctx.db)) > 0) return loadDemoSetup(ctx.config.dataDir);
  const started = Date.now();
  ctx.logger.info('seeding the sandbox: two demo clients with RSA keys, limits and funded balances');

  const dir = path.join(ctx.config.dataDir, 'demo');
  await mkdir(dir, { recursive: true });
  const clients: DemoClient[] = [];
  for (const demo of DEMOS) {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
    const privateKeyFile = path.join(dir, `${demo.slug}-private.pem`);
    await writeFile(privateKeyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const parsed = parsePublicKeyPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
    if (!parsed.ok) throw new Error(`demo key rejected: ${parsed.error}`);

    const created = await ctx.db.tx(async (q) => {
      const client = await createClient(q, { name: demo.name, currency: demo.currency });
      if (!client.ok) throw new Error(client.error);
      const key = await ctx.keys.create(q, {
        clientId: client.client.clientId,
        environment: ctx.config.env,
        publicKey: parsed.key,
      });
      await setKeyLimits(
        q,
        key.keyId,
        ctx.config.rails.map((rail) => ({ rail, ...DEMO_LIMITS })),
      );
      return { client: client.client, key };
    });
    await hooks.fund?.(created.client.clientId, demo.funding, `demo-funding-${demo.slug}`);
    if (demo.currency !== 'VES') await hooks.ensureRate?.(demo.currency);
    clients.push({
      name: demo.name,
      clientId: created.client.clientId,
      currency: demo.currency,
      keyId: created.key.keyId,
      apiKey: created.key.apiKey,
      privateKeyFile,
      publicKeyFingerprint: parsed.key.fingerprint,
    });
  }
  const setup: DemoSetup = { clients };
  await writeFile(credentialsFile(ctx.config.dataDir), JSON.stringify(setup, null, 2), { mode: 0o600 });
  ctx.logger.info({ ms: Date.now() - started }, 'sandbox seeded');
  return setup;
}

/** Records the listeners' addresses in the credentials file (written aside, then renamed over it). */
export async function recordDemoAddresses(
  dataDir: string,
  setup: DemoSetup,
  addresses: { baseUrl: string; adminUrl: string },
): Promise<DemoSetup> {
  const updated: DemoSetup = { ...setup, ...addresses };
  const file = credentialsFile(dataDir);
  const aside = `${file}.${process.pid}.tmp`;
  await writeFile(aside, JSON.stringify(updated, null, 2), { mode: 0o600 });
  await rename(aside, file);
  return updated;
}

export function describeDemoSetup(setup: DemoSetup, baseUrl: string, adminUrl: string, adminToken: string): string {
  const lines = [
    '',
    'dispersa sandbox is ready.',
    '',
    `  public API   ${baseUrl}`,
    `  operator API ${adminUrl}`,
    `  admin token  ${adminToken}`,
    '',
  ];
  for (const c of setup.clients) {
    lines.push(
      `  ${c.name} (${c.currency})`,
      `    api key      ${c.apiKey}`,
      `    private key  ${c.privateKeyFile}`,
      '',
    );
  }
  const ves = setup.clients[0]!;
  lines.push(
    'From the directory `npm start` ran in, the CLI needs no configuration: it reads the demo client and this',
    'address from the data dir.',
    '',
    '  npx dispersa me',
    '',
  );
  lines.push(
    'Make a signed call (identity of the VES demo key):',
    '',
    `  DISPERSA_BASE_URL=${baseUrl} DISPERSA_API_KEY=${ves.apiKey} DISPERSA_PRIVATE_KEY_FILE=${ves.privateKeyFile} npx dispersa me`,
    '',
    'Pay 1500.00 VES to a phone:',
    '',
    `  DISPERSA_BASE_URL=${baseUrl} DISPERSA_API_KEY=${ves.apiKey} DISPERSA_PRIVATE_KEY_FILE=${ves.privateKeyFile} npx dispersa pay --amount-minor 150000 --rail PM --beneficiary 04141234567 --bank-code 0102 --doc-type V --doc-number 12345678`,
    '',
  );
  return lines.join('\n');
}
