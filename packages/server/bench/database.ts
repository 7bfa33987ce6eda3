import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A uniquely named PostgreSQL database on the given server, created here and dropped by drop() (WITH FORCE, so
 * a killed server's connections do not keep it alive). Nothing else on that server is touched.
 */
export async function createBenchDatabase(
  baseUrl: string,
  prefix = 'dispersa_bench',
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
