import { ConfigError, loadConfig } from './config.ts';
import { PROCESS_UMASK } from './db/data-dir.ts';
import { openForProcess } from './db/open.ts';
import { logDestination } from './log-output.ts';
import { createLogger } from './logger.ts';
import { sandboxAdminToken } from './sandbox/admin-token.ts';
import { ListenError, start } from './server.ts';
import { armFailpoints } from './shared/failpoints.ts';
import { sleep } from './shared/run-worker.ts';
import { MasterKeyError } from './webhooks/master-key.ts';

/** Exit status of a start refused because of the operator's settings (bad variable, port in use). */
const EXIT_SETTINGS = 2;
/** The whole shutdown (contract, section 1). */
const SHUTDOWN_BOUND_MS = 10_000;

/** One clear line on stderr, then exit: what a person or a supervisor reads when start-up is refused. */
function refuse(status: number, message: string): never {
  process.stderr.write(`dispersa: ${message}\n`);
  process.exit(status);
}

/** Process entry: config → database → app → workers → signals. */
async function main(): Promise<void> {
  // Everything this process creates (database files, secrets, demo keys) is owner-only: 0600 files, 0700 folders.
  process.umask(PROCESS_UMASK);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuse(EXIT_SETTINGS, `configuration error: ${err.message}`);
    throw err;
  }
  armFailpoints(config.failpoints);
  // stdout carries JSON log lines only; on a terminal, readable lines, and the banner with them.
  const onTerminal = process.stdout.isTTY === true;
  const logger = createLogger(config.logLevel, logDestination());
  let adminToken = config.adminToken;
  if (adminToken === null) adminToken = (await sandboxAdminToken(config.dataDir)).token;
  if (config.webhookAllowInsecure) {
    logger.warn(
      'DISPERSA_WEBHOOK_ALLOW_INSECURE=true: webhook targets may be http:// or private addresses; never use this in production',
    );
  }
  if (config.databaseUrl === null && config.env === 'production') {
    logger.warn('production on the embedded database: an OS crash or power loss can lose acknowledged writes');
  }

  const db = await openForProcess(config, logger, (message) => refuse(EXIT_SETTINGS, message));
  let running: Awaited<ReturnType<typeof start>>;
  try {
    running = await start({ config: { ...config, adminToken }, db, logger });
  } catch (err) {
    await db.close().catch(() => {});
    if (err instanceof ListenError) refuse(EXIT_SETTINGS, err.message);
    if (err instanceof MasterKeyError) refuse(EXIT_SETTINGS, `webhook master key: ${err.message}`);
    throw err;
  }
  (onTerminal ? process.stdout : process.stderr).write(running.banner);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const began = Date.now();
    logger.info(
      { signal, delayMs: config.shutdownDelayMs },
      "shutting down: /readyz answers 503, then no new connections; requests in flight and workers' current items finish",
    );
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, SHUTDOWN_BOUND_MS);
    force.unref();
    running.readiness.markStopping();
    void sleep(config.shutdownDelayMs, new AbortController().signal)
      .then(() => running.stop())
      .then(() => db.close())
      .then(() => {
        logger.info({ signal, ms: Date.now() - began }, 'dispersa stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`dispersa: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  if (err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
