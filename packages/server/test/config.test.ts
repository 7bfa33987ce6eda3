import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a configuration error');
}

describe('configuration (operator contract, section 2)', () => {
  it('has the contract defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      env: 'sandbox',
      host: '127.0.0.1',
      port: 8080,
      adminHost: '127.0.0.1',
      adminPort: 8081,
      adminToken: null,
      databaseUrl: null,
      allowEmbeddedInProduction: false,
      rails: ['PM', 'CCE'],
      quoteTtlSeconds: 60,
      quoteMaxLivePerClient: 20,
      quoteMaxLiveTotal: 10_000,
      quoteMinTargetMinor: 100n,
      unknownBudgetSeconds: 900,
      reconcileIntervalMs: 5000,
      sandboxSettleMs: 2000,
      webhookRetryBaseMs: 1000,
      webhookMaxAttempts: 12,
      webhookAllowInsecure: false,
      dbPoolMax: 10,
      serviceLimits: [],
      logLevel: 'info',
      bankGateway: null,
    });
    expect(c.dataDir.endsWith('.dispersa/sandbox')).toBe(true);
    const prod = loadConfig({
      DISPERSA_ENV: 'production',
      DISPERSA_ADMIN_TOKEN: 't'.repeat(20),
      DATABASE_URL: 'postgres://x/y',
      DISPERSA_MASTER_KEY_FILE: '/etc/dispersa/master.key',
    });
    expect(prod.masterKey).toEqual({ kind: 'file', path: '/etc/dispersa/master.key' });
    expect(prod.rails).toEqual(['PM']);
  });

  it('names the variable of every bad value', () => {
    const cases: [Record<string, string>, string][] = [
      [{ DISPERSA_ENV: 'staging' }, 'DISPERSA_ENV'],
      [{ DISPERSA_PORT: 'http' }, 'DISPERSA_PORT'],
      [{ DISPERSA_ADMIN_PORT: '70000' }, 'DISPERSA_ADMIN_PORT'],
      [{ DISPERSA_RAILS: 'PM,ACH' }, 'DISPERSA_RAILS'],
      [{ DISPERSA_QUOTE_TTL_SECONDS: 'soon' }, 'DISPERSA_QUOTE_TTL_SECONDS'],
      [{ DISPERSA_QUOTE_MIN_TARGET_MINOR: '-1' }, 'DISPERSA_QUOTE_MIN_TARGET_MINOR'],
      [{ DISPERSA_WEBHOOK_ALLOW_INSECURE: 'yes' }, 'DISPERSA_WEBHOOK_ALLOW_INSECURE'],
      [{ DISPERSA_SERVICE_LIMITS: '{"rail":"PM"}' }, 'DISPERSA_SERVICE_LIMITS'],
      [
        { DISPERSA_SERVICE_LIMITS: '[{"rail":"PM","perPaymentMaxMinor":5,"dailyMaxMinor":"9"}]' },
        'DISPERSA_SERVICE_LIMITS',
      ],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ DISPERSA_LOG_LEVEL: 'loud' }, 'DISPERSA_LOG_LEVEL'],
      [{ DISPERSA_ADMIN_TOKEN: 'short' }, 'DISPERSA_ADMIN_TOKEN'],
      [{ DISPERSA_BANK_GATEWAY_URL: 'https://gw.example' }, 'DISPERSA_BANK_GATEWAY_KEY_ID'],
      [{ DISPERSA_DISPATCH_TIMEOUT_MS: '5' }, 'DISPERSA_DISPATCH_TIMEOUT_MS'],
      [{ DISPERSA_DB_POOL_MAX: '1' }, 'DISPERSA_DB_POOL_MAX'],
    ];
    for (const [env, variable] of cases) {
      const err = errorOf(env);
      expect(err.variable, JSON.stringify(env)).toBe(variable);
      expect(err.message.startsWith(`${variable}:`)).toBe(true);
    }
  });

  it('production needs an admin token, and PostgreSQL unless the embedded risk is accepted', () => {
    expect(errorOf({ DISPERSA_ENV: 'production', DATABASE_URL: 'postgres://x/y' }).variable).toBe(
      'DISPERSA_ADMIN_TOKEN',
    );
    const embedded = errorOf({ DISPERSA_ENV: 'production', DISPERSA_ADMIN_TOKEN: 't'.repeat(20) });
    expect(embedded.variable).toBe('DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION');
    expect(embedded.message).toMatch(/fsync/);
    expect(
      loadConfig({
        DISPERSA_ENV: 'production',
        DISPERSA_ADMIN_TOKEN: 't'.repeat(20),
        DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION: 'true',
        DISPERSA_MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
      }).databaseUrl,
    ).toBeNull();
  });

  it('production needs a webhook master key, from a file or as the value; a sandbox may generate one', () => {
    const prod = { DISPERSA_ENV: 'production', DISPERSA_ADMIN_TOKEN: 't'.repeat(20), DATABASE_URL: 'postgres://x/y' };
    const missing = errorOf(prod);
    expect(missing.variable).toBe('DISPERSA_MASTER_KEY_FILE');
    expect(missing.message).toMatch(/required in production/);
    const key = Buffer.alloc(32, 9);
    expect(loadConfig({ ...prod, DISPERSA_MASTER_KEY: key.toString('base64') }).masterKey).toEqual({
      kind: 'value',
      key,
    });
    const short = errorOf({ ...prod, DISPERSA_MASTER_KEY: 'c2hvcnQtc2VjcmV0LXZhbHVl' });
    expect(short.variable).toBe('DISPERSA_MASTER_KEY');
    // The message never repeats a secret it was given.
    expect(short.message).not.toContain('c2hvcnQtc2VjcmV0LXZhbHVl');
    const both = errorOf({ ...prod, DISPERSA_MASTER_KEY: key.toString('base64'), DISPERSA_MASTER_KEY_FILE: '/k' });
    expect(both.variable).toBe('DISPERSA_MASTER_KEY');
    expect(loadConfig({}).masterKey).toEqual({ kind: 'generated' });
  });

  it('refuses insecure webhook targets in production', () => {
    const err = errorOf({
      DISPERSA_MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
      DISPERSA_ENV: 'production',
      DISPERSA_ADMIN_TOKEN: 't'.repeat(20),
      DATABASE_URL: 'postgres://x/y',
      DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true',
    });
    expect(err.variable).toBe('DISPERSA_WEBHOOK_ALLOW_INSECURE');
  });

  it('parses service limits and rails', () => {
    const c = loadConfig({
      DISPERSA_RAILS: 'cce, PM',
      DISPERSA_SERVICE_LIMITS: '[{"rail":"PM","perPaymentMaxMinor":"100","dailyMaxMinor":"1000"}]',
    });
    expect(c.rails).toEqual(['CCE', 'PM']);
    expect(c.serviceLimits).toEqual([{ rail: 'PM', perPaymentMaxMinor: 100n, dailyMaxMinor: 1000n }]);
  });
});

it('a bad value stops the real process at start with a message naming the variable', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
    cwd: new URL('../../../', import.meta.url).pathname,
    env: { ...process.env, DATABASE_URL: '', DISPERSA_QUOTE_TTL_SECONDS: 'soon' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(code).toBe(2);
  expect(stderr).toMatch(/configuration error: DISPERSA_QUOTE_TTL_SECONDS/);
});
