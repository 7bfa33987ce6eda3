import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import type { DemoSetup } from '../sandbox/first-start.ts';
import { type OptionSpecs, UsageError } from './args.ts';
import type { CommandContext } from './command.ts';

/**
 * Where the CLI connects and with which credentials. Flags win over environment variables, which win over
 * defaults. A sandbox started with `npm start` leaves its admin token and demo credentials in its data dir
 * (./.dispersa/sandbox, or DISPERSA_DATA_DIR), and the CLI falls back to them so that a newcomer needs no setup.
 */

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081';

export const PUBLIC_OPTIONS: OptionSpecs = {
  'base-url': { type: 'string', value: 'URL', description: `public API (DISPERSA_BASE_URL; ${DEFAULT_BASE_URL})` },
};

export const CLIENT_OPTIONS: OptionSpecs = {
  ...PUBLIC_OPTIONS,
  'api-key': { type: 'string', value: 'KEY', description: 'API key sk_test_/sk_live_ (DISPERSA_API_KEY)' },
  'private-key-file': {
    type: 'string',
    value: 'FILE',
    description: 'PEM private key registered for the key (DISPERSA_PRIVATE_KEY_FILE)',
  },
  'nonce-file': {
    type: 'string',
    value: 'FILE',
    description: 'nonce state shared by CLI runs (DISPERSA_NONCE_FILE; ~/.dispersa/nonces/<hash of key>.nonce)',
  },
  demo: {
    type: 'string',
    value: 'VES|USD',
    description: 'use the sandbox demo client of that currency (from the data dir)',
  },
};

export const ADMIN_OPTIONS: OptionSpecs = {
  'admin-url': { type: 'string', value: 'URL', description: `operator API (DISPERSA_ADMIN_URL; ${DEFAULT_ADMIN_URL})` },
  'admin-token': {
    type: 'string',
    value: 'TOKEN',
    description: 'operator bearer token (DISPERSA_ADMIN_TOKEN; sandbox: <data dir>/admin-token)',
  },
};

function setting(ctx: CommandContext, flag: string, variable: string): string | undefined {
  const fromFlag = ctx.flags.string(flag);
  if (fromFlag !== undefined && fromFlag !== '') return fromFlag;
  const fromEnv = ctx.io.env[variable]?.trim();
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

function checkedUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${what} is not a URL: "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${what} must be http(s): ${value}`);
  return value.replace(/\/+$/, '');
}

/**
 * The public API's address: --base-url, else DISPERSA_BASE_URL, else the address the sandbox in the data dir
 * recorded when it last started (so `DISPERSA_PORT=9000 npm start` needs no setting), else the default.
 */
export async function resolveBaseUrl(ctx: CommandContext): Promise<string> {
  const explicit = setting(ctx, 'base-url', 'DISPERSA_BASE_URL');
  if (explicit !== undefined) return checkedUrl(explicit, 'base URL (--base-url or DISPERSA_BASE_URL)');
  const recorded = (await readDemoSetup(ctx))?.setup.baseUrl;
  if (recorded !== undefined) return checkedUrl(recorded, `base URL recorded in ${demoFile(ctx)}`);
  return DEFAULT_BASE_URL;
}

/** The sandbox data dir as the server computes its default: ./.dispersa/sandbox below the working directory. */
export function sandboxDataDir(ctx: CommandContext): string {
  const fromEnv = ctx.io.env['DISPERSA_DATA_DIR']?.trim();
  return path.resolve(ctx.io.cwd, fromEnv || path.join('.dispersa', 'sandbox'));
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

async function readOptional(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

export interface ClientCredentials {
  baseUrl: string;
  apiKey: string;
  privateKeyPem: string;
  nonceFile: string;
}

function defaultNonceFile(ctx: CommandContext, apiKey: string): string {
  // A hash, not the key: the file name must not leak the secret into directory listings.
  const name = createHash('sha256').update(apiKey).digest('hex').slice(0, 32);
  const home = ctx.io.env['HOME']?.trim() || homedir();
  return path.join(home, '.dispersa', 'nonces', `${name}.nonce`);
}

function demoFile(ctx: CommandContext): string {
  return path.join(sandboxDataDir(ctx), 'demo', 'credentials.json');
}

async function readDemoSetup(ctx: CommandContext): Promise<{ file: string; setup: DemoSetup } | null> {
  const file = demoFile(ctx);
  const text = await readOptional(file);
  if (text === null) return null;
  try {
    return { file, setup: JSON.parse(text) as DemoSetup };
  } catch {
    throw new UsageError(`${file} is not JSON`);
  }
}

async function demoClient(ctx: CommandContext, currency: string | undefined) {
  const demo = await readDemoSetup(ctx);
  if (demo === null) return null;
  const { file, setup } = demo;
  const wanted = (currency ?? 'VES').toUpperCase();
  const found = setup.clients?.find((c) => c.currency === wanted);
  if (!found) throw new UsageError(`${file} has no demo client in ${wanted}`);
  return { file, client: found, baseUrl: setup.baseUrl };
}

export async function resolveClientCredentials(ctx: CommandContext): Promise<ClientCredentials> {
  const explicitBase = setting(ctx, 'base-url', 'DISPERSA_BASE_URL');
  let baseUrl = explicitBase === undefined ? DEFAULT_BASE_URL : checkedUrl(explicitBase, 'base URL');
  const demoFlag = ctx.flags.string('demo');
  let apiKey = demoFlag === undefined ? setting(ctx, 'api-key', 'DISPERSA_API_KEY') : undefined;
  let keyFile = setting(ctx, 'private-key-file', 'DISPERSA_PRIVATE_KEY_FILE');
  if (apiKey === undefined) {
    const demo = await demoClient(ctx, demoFlag);
    if (demo === null) {
      throw new UsageError(
        demoFlag === undefined
          ? 'no API key: set DISPERSA_API_KEY and DISPERSA_PRIVATE_KEY_FILE (or --api-key and --private-key-file). ' +
              'With a sandbox started by `npm start`, run from the repository root (or set DISPERSA_DATA_DIR) to use its demo client.'
          : `no sandbox demo credentials under ${sandboxDataDir(ctx)}: start the sandbox first (npm start)`,
      );
    }
    apiKey = demo.client.apiKey;
    keyFile = demo.client.privateKeyFile;
    // Demo credentials belong to the sandbox that made them: call it where it said it listens.
    if (explicitBase === undefined && demo.baseUrl !== undefined) {
      baseUrl = checkedUrl(demo.baseUrl, `base URL recorded in ${demo.file}`);
    }
    ctx.note(
      `using sandbox demo client "${demo.client.name}" (${demo.client.currency}) from ${demo.file}, at ${baseUrl}`,
    );
  }
  if (keyFile === undefined) {
    throw new UsageError('no private key: set DISPERSA_PRIVATE_KEY_FILE (or --private-key-file)');
  }
  const resolvedKeyFile = path.resolve(ctx.io.cwd, keyFile);
  const privateKeyPem = await readOptional(resolvedKeyFile);
  if (privateKeyPem === null) throw new UsageError(`private key file not found: ${resolvedKeyFile}`);
  const nonceSetting = setting(ctx, 'nonce-file', 'DISPERSA_NONCE_FILE');
  const nonceFile = nonceSetting === undefined ? defaultNonceFile(ctx, apiKey) : path.resolve(ctx.io.cwd, nonceSetting);
  return { baseUrl, apiKey, privateKeyPem, nonceFile };
}

export interface AdminConnection {
  adminUrl: string;
  token: string;
}

export async function resolveAdminConnection(ctx: CommandContext): Promise<AdminConnection> {
  const explicitAdmin = setting(ctx, 'admin-url', 'DISPERSA_ADMIN_URL');
  const recordedAdmin = explicitAdmin === undefined ? (await readDemoSetup(ctx))?.setup.adminUrl : undefined;
  const adminUrl = checkedUrl(explicitAdmin ?? recordedAdmin ?? DEFAULT_ADMIN_URL, 'admin URL');
  let token = setting(ctx, 'admin-token', 'DISPERSA_ADMIN_TOKEN');
  if (token === undefined) {
    const file = path.join(sandboxDataDir(ctx), 'admin-token');
    token = (await readOptional(file))?.trim() || undefined;
    if (token === undefined) {
      throw new UsageError(
        `no operator token: set DISPERSA_ADMIN_TOKEN (or --admin-token); a sandbox keeps its generated token in ${file}`,
      );
    }
  }
  return { adminUrl, token };
}
