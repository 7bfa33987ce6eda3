import path from 'node:path';
import { isBase64 } from './shared/base64.ts';
import { FAILPOINTS } from './shared/failpoints.ts';
import { MASTER_KEY_BYTES } from './webhooks/master-key.ts';

/**
 * Every environment variable of the operator contract (section 2), parsed and validated once.
 * A bad value throws ConfigError naming the variable; main.ts prints it and exits non-zero.
 */

export type Environment = 'sandbox' | 'production';
export type RailCode = 'PM' | 'CCE';
export const RAIL_CODES: readonly RailCode[] = ['PM', 'CCE'];

export interface ServiceLimit {
  rail: RailCode;
  perPaymentMaxMinor: bigint;
  dailyMaxMinor: bigint;
}

export interface BankGatewayConfig {
  url: string;
  keyId: string;
  secret: string;
  timeoutMs: number;
}

export interface Config {
  env: Environment;
  /** Crash points for the crash tests (shared/failpoints.ts); empty in any real deployment. */
  failpoints: string[];
  host: string;
  port: number;
  adminHost: string;
  adminPort: number;
  /** null on a sandbox until first start generates and stores one (see sandbox/admin-token.ts). */
  adminToken: string | null;
  databaseUrl: string | null;
  allowEmbeddedInProduction: boolean;
  dataDir: string;
  rails: RailCode[];
  quoteTtlSeconds: number;
  quoteMaxLivePerClient: number;
  quoteMaxLiveTotal: number;
  quoteMinTargetMinor: bigint;
  unknownBudgetSeconds: number;
  reconcileIntervalMs: number;
  /** How long a payment may stay `processing` after it was handed to its rail before it is presumed interrupted. */
  dispatchTimeoutMs: number;
  sandboxSettleMs: number;
  /** PostgreSQL only: the most connections the process opens. */
  dbPoolMax: number;
  /** Payment batches run side by side (a client's payments always share one lane). */
  paymentLanes: number;
  /** The most payment requests one batch carries. */
  paymentMaxBatch: number;
  /** Embedded database only: minutes between its VACUUM (ANALYZE) runs (db/maintenance.ts). */
  embeddedVacuumMinutes: number;
  webhookRetryBaseMs: number;
  webhookMaxAttempts: number;
  webhookAllowInsecure: boolean;
  serviceLimits: ServiceLimit[];
  logLevel: string;
  /** Read-only bearer token of GET /metrics (the admin token works too). null: none. */
  metricsToken: string | null;
  /** On SIGTERM, how long /readyz answers 503 while the listeners still serve, so load balancers move away first. */
  shutdownDelayMs: number;
  /** Production rail: where the operator's bank gateway adapter listens. null: not configured. */
  bankGateway: BankGatewayConfig | null;
  /** Where the key sealing the webhook signing keys comes from (webhooks/master-key.ts). */
  masterKey: MasterKeySource;
}

/**
 * The webhook master key: a file (DISPERSA_MASTER_KEY_FILE), the value itself (DISPERSA_MASTER_KEY, 32 bytes in
 * base64), or, on a sandbox only, a key generated into the data directory at first start.
 */
export type MasterKeySource = { kind: 'file'; path: string } | { kind: 'value'; key: Buffer } | { kind: 'generated' };

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value)) throw new ConfigError(name, `must be an integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  }
  return n;
}

function minorAmount(env: Env, name: string, fallback: bigint): bigint {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^\d{1,30}$/.test(value)) throw new ConfigError(name, `must be a non-negative integer of minor units`);
  return BigInt(value);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ConfigError(name, `must be "true" or "false", got "${value}"`);
}

function port(env: Env, name: string, fallback: number): number {
  return integer(env, name, fallback, 0, 65535);
}

function parseRails(env: Env, environment: Environment): RailCode[] {
  const value = raw(env, 'DISPERSA_RAILS');
  if (value === undefined) return environment === 'sandbox' ? ['PM', 'CCE'] : ['PM'];
  const rails = value.split(',').map((r) => r.trim().toUpperCase());
  const out: RailCode[] = [];
  for (const rail of rails) {
    if (!RAIL_CODES.includes(rail as RailCode)) {
      throw new ConfigError('DISPERSA_RAILS', `unknown rail "${rail}" (known: ${RAIL_CODES.join(', ')})`);
    }
    if (!out.includes(rail as RailCode)) out.push(rail as RailCode);
  }
  if (out.length === 0) throw new ConfigError('DISPERSA_RAILS', 'must name at least one rail');
  return out;
}

function parseServiceLimits(env: Env): ServiceLimit[] {
  const value = raw(env, 'DISPERSA_SERVICE_LIMITS');
  if (value === undefined) return [];
  const name = 'DISPERSA_SERVICE_LIMITS';
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError(name, 'must be a JSON array of { rail, perPaymentMaxMinor, dailyMaxMinor }');
  }
  if (!Array.isArray(parsed)) throw new ConfigError(name, 'must be a JSON array');
  const seen = new Set<string>();
  return parsed.map((entry, i) => {
    if (typeof entry !== 'object' || entry === null) throw new ConfigError(name, `entry ${i} must be an object`);
    const { rail, perPaymentMaxMinor, dailyMaxMinor } = entry as Record<string, unknown>;
    if (typeof rail !== 'string' || !RAIL_CODES.includes(rail as RailCode)) {
      throw new ConfigError(name, `entry ${i}: rail must be one of ${RAIL_CODES.join(', ')}`);
    }
    if (seen.has(rail)) throw new ConfigError(name, `entry ${i}: rail ${rail} appears twice`);
    seen.add(rail);
    const amount = (v: unknown, field: string): bigint => {
      if (typeof v !== 'string' || !/^[1-9]\d{0,29}$/.test(v)) {
        throw new ConfigError(name, `entry ${i}: ${field} must be a string holding a positive integer`);
      }
      return BigInt(v);
    };
    return {
      rail: rail as RailCode,
      perPaymentMaxMinor: amount(perPaymentMaxMinor, 'perPaymentMaxMinor'),
      dailyMaxMinor: amount(dailyMaxMinor, 'dailyMaxMinor'),
    };
  });
}

function parseDatabaseUrl(env: Env): string | null {
  const value = raw(env, 'DATABASE_URL');
  if (value === undefined) return null;
  if (!/^postgres(ql)?:\/\//.test(value)) {
    throw new ConfigError('DATABASE_URL', 'must start with postgres:// or postgresql://');
  }
  return value;
}

function parseBankGateway(env: Env): BankGatewayConfig | null {
  const url = raw(env, 'DISPERSA_BANK_GATEWAY_URL');
  const keyId = raw(env, 'DISPERSA_BANK_GATEWAY_KEY_ID');
  const secret = raw(env, 'DISPERSA_BANK_GATEWAY_SECRET');
  const timeoutMs = integer(env, 'DISPERSA_BANK_GATEWAY_TIMEOUT_MS', 10_000, 100, 120_000);
  if (url === undefined) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('DISPERSA_BANK_GATEWAY_URL', `is not a URL: "${url}"`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new ConfigError('DISPERSA_BANK_GATEWAY_URL', 'must be an http:// or https:// URL');
  }
  if (keyId === undefined)
    throw new ConfigError('DISPERSA_BANK_GATEWAY_KEY_ID', 'is required with DISPERSA_BANK_GATEWAY_URL');
  if (secret === undefined || secret.length < 32) {
    throw new ConfigError(
      'DISPERSA_BANK_GATEWAY_SECRET',
      'is required with DISPERSA_BANK_GATEWAY_URL, at least 32 characters',
    );
  }
  return { url: url.replace(/\/+$/, ''), keyId, secret, timeoutMs };
}

export function loadConfig(env: Env = process.env): Config {
  const envValue = raw(env, 'DISPERSA_ENV') ?? 'sandbox';
  if (envValue !== 'sandbox' && envValue !== 'production') {
    throw new ConfigError('DISPERSA_ENV', `must be "sandbox" or "production", got "${envValue}"`);
  }
  const environment: Environment = envValue;
  const adminToken = raw(env, 'DISPERSA_ADMIN_TOKEN') ?? null;
  if (environment === 'production' && adminToken === null) {
    throw new ConfigError('DISPERSA_ADMIN_TOKEN', 'is required in production');
  }
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError('DISPERSA_ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const metricsToken = raw(env, 'DISPERSA_METRICS_TOKEN') ?? null;
  if (metricsToken !== null && metricsToken.length < 16) {
    throw new ConfigError('DISPERSA_METRICS_TOKEN', 'must be at least 16 characters');
  }
  const databaseUrl = parseDatabaseUrl(env);
  const allowEmbeddedInProduction = boolean(env, 'DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION', false);
  if (environment === 'production' && databaseUrl === null && !allowEmbeddedInProduction) {
    throw new ConfigError(
      'DISPERSA_ALLOW_EMBEDDED_IN_PRODUCTION',
      'production needs DATABASE_URL: the embedded database does not fsync, so an OS crash or power loss can lose ' +
        'acknowledged payments. Set DATABASE_URL, or set this variable to true to accept that risk',
    );
  }
  const logLevel = raw(env, 'DISPERSA_LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('DISPERSA_LOG_LEVEL', `must be a pino level, got "${logLevel}"`);
  }
  const webhookAllowInsecure = boolean(env, 'DISPERSA_WEBHOOK_ALLOW_INSECURE', false);
  if (webhookAllowInsecure && environment === 'production') {
    throw new ConfigError(
      'DISPERSA_WEBHOOK_ALLOW_INSECURE',
      'must not be true in production: it lets webhook deliveries reach private and loopback addresses',
    );
  }

  const failpoints = (raw(env, 'DISPERSA_FAILPOINTS') ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  for (const f of failpoints) {
    if (!(FAILPOINTS as readonly string[]).includes(f)) {
      throw new ConfigError('DISPERSA_FAILPOINTS', `unknown crash point "${f}" (known: ${FAILPOINTS.join(', ')})`);
    }
  }
  if (failpoints.length > 0 && environment === 'production') {
    throw new ConfigError('DISPERSA_FAILPOINTS', 'must not be set in production: it kills the process on purpose');
  }
  const masterKey = parseMasterKey(env, environment);

  return {
    env: environment,
    failpoints,
    host: raw(env, 'DISPERSA_HOST') ?? '127.0.0.1',
    port: port(env, 'DISPERSA_PORT', 8080),
    adminHost: raw(env, 'DISPERSA_ADMIN_HOST') ?? '127.0.0.1',
    adminPort: port(env, 'DISPERSA_ADMIN_PORT', 8081),
    adminToken,
    databaseUrl,
    allowEmbeddedInProduction,
    dataDir: path.resolve(raw(env, 'DISPERSA_DATA_DIR') ?? path.join('.dispersa', environment)),
    rails: parseRails(env, environment),
    quoteTtlSeconds: integer(env, 'DISPERSA_QUOTE_TTL_SECONDS', 60, 1, 86_400),
    quoteMaxLivePerClient: integer(env, 'DISPERSA_QUOTE_MAX_LIVE_PER_CLIENT', 20, 1, 1_000_000),
    quoteMaxLiveTotal: integer(env, 'DISPERSA_QUOTE_MAX_LIVE_TOTAL', 10_000, 1, 100_000_000),
    quoteMinTargetMinor: minorAmount(env, 'DISPERSA_QUOTE_MIN_TARGET_MINOR', 100n),
    unknownBudgetSeconds: integer(env, 'DISPERSA_UNKNOWN_BUDGET_SECONDS', 900, 1, 30 * 86_400),
    reconcileIntervalMs: integer(env, 'DISPERSA_RECONCILE_INTERVAL_MS', 5000, 10, 86_400_000),
    sandboxSettleMs: integer(env, 'DISPERSA_SANDBOX_SETTLE_MS', 2000, 0, 86_400_000),
    dispatchTimeoutMs: integer(env, 'DISPERSA_DISPATCH_TIMEOUT_MS', 30_000, 1_000, 3_600_000),
    dbPoolMax: integer(env, 'DISPERSA_DB_POOL_MAX', 10, 2, 1000),
    paymentLanes: integer(env, 'DISPERSA_PAYMENT_LANES', 1, 1, 64),
    paymentMaxBatch: integer(env, 'DISPERSA_PAYMENT_MAX_BATCH', 256, 1, 1024),
    embeddedVacuumMinutes: integer(env, 'DISPERSA_EMBEDDED_VACUUM_MINUTES', 15, 1, 1440),
    webhookRetryBaseMs: integer(env, 'DISPERSA_WEBHOOK_RETRY_BASE_MS', 1000, 1, 3_600_000),
    webhookMaxAttempts: integer(env, 'DISPERSA_WEBHOOK_MAX_ATTEMPTS', 12, 1, 100),
    webhookAllowInsecure,
    serviceLimits: parseServiceLimits(env),
    logLevel,
    metricsToken,
    // The whole shutdown must fit in 10 s: at most 5 of them waiting for load balancers.
    shutdownDelayMs: integer(env, 'DISPERSA_SHUTDOWN_DELAY_MS', 0, 0, 5000),
    bankGateway: parseBankGateway(env),
    masterKey,
  };
}

function parseMasterKey(env: Env, environment: Environment): MasterKeySource {
  const file = raw(env, 'DISPERSA_MASTER_KEY_FILE');
  const value = raw(env, 'DISPERSA_MASTER_KEY');
  if (file !== undefined && value !== undefined) {
    throw new ConfigError(
      'DISPERSA_MASTER_KEY',
      'set either DISPERSA_MASTER_KEY_FILE or DISPERSA_MASTER_KEY, not both',
    );
  }
  if (file !== undefined) return { kind: 'file', path: path.resolve(file) };
  if (value !== undefined) {
    const key = Buffer.from(value, 'base64');
    if (!isBase64(value) || key.length !== MASTER_KEY_BYTES) {
      // The value itself is never repeated in the message: it is a secret.
      throw new ConfigError(
        'DISPERSA_MASTER_KEY',
        `must be ${MASTER_KEY_BYTES} bytes in base64 (openssl rand -base64 32)`,
      );
    }
    return { kind: 'value', key };
  }
  if (environment === 'production') {
    throw new ConfigError(
      'DISPERSA_MASTER_KEY_FILE',
      'is required in production (or DISPERSA_MASTER_KEY): the key sealing the webhook signing keys must be the same ' +
        'on every process of one database, so it is configured, not generated into one data directory',
    );
  }
  return { kind: 'generated' };
}
