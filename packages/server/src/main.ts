import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/open.ts';
import { createLogger } from './logger.ts';
import { sandboxAdminToken } from './sandbox/admin-token.ts';
import { start } from './server.ts';

/** Process entry: config → database → app → workers → signals. */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`dispersa: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
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

  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const running = await start({ config: { ...config, adminToken }, db, logger });
  process.stdout.write(running.banner);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    void running
      .stop()
      .then(() => db.close())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`dispersa: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
