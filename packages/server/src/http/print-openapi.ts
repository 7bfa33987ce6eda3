import { compose } from '../compose.ts';
import { loadConfig } from '../config.ts';
import { createEmbeddedDb } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { createLogger } from '../logger.ts';

/** `npm run openapi`: prints the OpenAPI document generated from the route schemas, with no server listening. */
const db = await createEmbeddedDb(null);
await migrate(db);
const token = 'openapi-printer-token-not-used';
const config = loadConfig({ DISPERSA_ADMIN_TOKEN: token, DISPERSA_DATA_DIR: `/tmp/dispersa-openapi-${process.pid}` });
const composed = await compose({ config: { ...config, adminToken: token }, db, logger: createLogger('silent') });
await composed.publicApp.ready();
process.stdout.write(`${JSON.stringify(composed.publicApp.swagger(), null, 2)}\n`);
await composed.stop();
await db.close();
