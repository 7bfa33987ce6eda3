import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../args.ts';
import { type CommandContext, PRINTED } from '../command.ts';

/** Local tools: a key pair for a new client, and the processes that run beside the service. */

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

export async function keygen(ctx: CommandContext): Promise<unknown> {
  const dir = path.resolve(ctx.io.cwd, ctx.flags.string('out-dir') ?? '.');
  const name = ctx.flags.string('name') ?? 'dispersa';
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new UsageError('--name may hold letters, digits, . _ - only', ctx.name);
  const bits = ctx.flags.integer('bits') ?? 2048;
  if (bits < 2048) throw new UsageError('--bits must be at least 2048 (the service refuses smaller keys)', ctx.name);
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: bits, publicExponent: 65537 });
  const privateKeyFile = path.join(dir, `${name}-private.pem`);
  const publicKeyFile = path.join(dir, `${name}-public.pem`);
  await mkdir(dir, { recursive: true });
  try {
    // 'wx': never overwrite a private key someone may already have registered.
    await writeFile(privateKeyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if (errorCode(err) === 'EEXIST')
      throw new UsageError(`${privateKeyFile} exists; choose another --name or --out-dir`);
    throw err;
  }
  await writeFile(publicKeyFile, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o644 });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const publicKeyFingerprint = `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
  ctx.note(`register the public half with: dispersa admin keys create <clientId> --public-key-file ${publicKeyFile}`);
  return { privateKeyFile, publicKeyFile, publicKeyFingerprint };
}

export async function bankSim(ctx: CommandContext): Promise<unknown> {
  const { BankSimEnvError, runBankSimFromEnv } = await import('../../bank-sim/run.ts');
  let sim: Awaited<ReturnType<typeof runBankSimFromEnv>>;
  try {
    sim = await runBankSimFromEnv(ctx.io.env);
  } catch (err) {
    if (err instanceof BankSimEnvError) throw new UsageError(err.message);
    throw err;
  }
  ctx.io.stdout.write(`${JSON.stringify({ bankSim: sim.url })}\n`);
  ctx.note(`bank simulator listening on ${sim.url}; Ctrl-C stops`);
  await new Promise<void>((resolve) => {
    if (ctx.io.signal.aborted) resolve();
    ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await sim.close();
  return PRINTED;
}

/** The background loops alone, with the service's own configuration (the same variables as `npm start`). */
export async function worker(ctx: CommandContext): Promise<unknown> {
  const { ConfigError, loadConfig } = await import('../../config.ts');
  const { openForProcess } = await import('../../db/open.ts');
  const { createLogger } = await import('../../logger.ts');
  const { sandboxAdminToken } = await import('../../sandbox/admin-token.ts');
  const { runWorkersOnly } = await import('../../worker-main.ts');
  const { PROCESS_UMASK } = await import('../../db/data-dir.ts');
  process.umask(PROCESS_UMASK);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(ctx.io.env);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(`configuration error: ${err.message}`);
    throw err;
  }
  const adminToken = config.adminToken ?? (await sandboxAdminToken(config.dataDir)).token;
  const { logDestination } = await import('../../log-output.ts');
  const logger = createLogger(config.logLevel, logDestination());
  const db = await openForProcess(config, logger, (message) => {
    throw new UsageError(message);
  });
  const { MasterKeyError } = await import('../../webhooks/master-key.ts');
  let running: Awaited<ReturnType<typeof runWorkersOnly>>;
  try {
    running = await runWorkersOnly({ config: { ...config, adminToken }, db, logger });
  } catch (err) {
    await db.close();
    if (err instanceof MasterKeyError) throw new UsageError(`webhook master key: ${err.message}`);
    throw err;
  }
  ctx.note(`workers running (${config.env}, ${db.kind} database); Ctrl-C stops`);
  await new Promise<void>((resolve) => {
    if (ctx.io.signal.aborted) resolve();
    ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const began = Date.now();
  logger.info('shutting down: workers finish their current items');
  await running.stop();
  await db.close();
  logger.info({ ms: Date.now() - began }, 'dispersa worker stopped');
  return PRINTED;
}
