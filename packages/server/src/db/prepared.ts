/**
 * The calls of the hot paths (a payment's reserve and booking, the sandbox bank's batch and its statement's page,
 * the nonce flush, the payment read, the webhook claims), which run up to thousands of times a second with the same
 * text. On PostgreSQL each runs as a named prepared statement: parsed and planned once per connection instead of at
 * every call (parse and plan of the unnamed statements were about 6 % of the database's CPU under the payment
 * bench). The text stays the SQL itself, so call sites, tests and the embedded back-end (one connection, its own
 * protocol) see a plain string; only the PostgreSQL back-end asks for the name.
 *
 * Only calls of a set-returning function belong here. A connection keeps a prepared statement's generic plan until
 * the tables' statistics change, and without statistics (a fresh database, autovacuum off) the generic plan of a
 * query over a table is a sequential scan that would stay as the table grows; a function call's plan reads no table
 * (the functions' own statements choose their indexes: migrations 0025-0028). test/db/prepared.test.ts holds every
 * declared statement to that.
 *
 * A name is kept per process, given in the order the statements are declared; a connection prepares a statement the
 * first time it runs it. Behind PgBouncer in transaction pooling, set max_prepared_statements (docs/operations.md).
 */

const names = new Map<string, string>();

/** Declares sql a prepared statement; returns it unchanged. */
export function prepared(sql: string): string {
  if (!names.has(sql)) names.set(sql, `dispersa_${names.size + 1}`);
  return sql;
}

/** The statement's name when sql was declared with prepared(), else undefined (run unnamed). */
export function preparedName(sql: string): string | undefined {
  return names.get(sql);
}

/** Every statement declared so far (text -> name). */
export function preparedStatements(): ReadonlyMap<string, string> {
  return names;
}
