import { type PGlite, parse, protocol } from '@electric-sql/pglite';
import { preparedName } from './prepared.ts';

/**
 * Prepared statements (prepared.ts) on the embedded database. PGlite's query() sends each protocol message into
 * the WASM backend on its own (parse, describe, bind, describe, execute, sync): six passes for one statement, which
 * cost a parameterised one-row SELECT 380 us against 65 us for one pass with a named statement on this machine.
 * Here a declared statement is parsed and described once, then each call is one pass: bind, execute, sync.
 *
 * Values go in as text through PGlite's own serializers of the parameter types the describe reported, and rows come
 * back through its own parsers (so int8 and numeric stay strings, as the embedded back-end configures them): the
 * answers are those of query(). The statement runs under both of PGlite's locks, as query() does, so it never lands
 * between the statements of someone else's transaction.
 */

interface Described {
  paramTypes: number[];
  /** The statement's rowDescription (none for a statement that returns no rows). */
  rowDescription: Message | undefined;
}

type Message = Awaited<ReturnType<PGlite['execProtocolStream']>>[number];

export interface PreparedRunner {
  /** The rows and affected-row count of sql, or undefined when sql is not a declared statement (run it with query()). */
  run(
    sql: string,
    params: readonly unknown[] | undefined,
  ): Promise<{ rows: unknown[]; affectedRows: number } | undefined>;
}

export function createPreparedRunner(pglite: PGlite): PreparedRunner {
  const described = new Map<string, Described>();
  const { serialize } = protocol;

  async function exchange(parts: readonly Uint8Array[]): Promise<Message[]> {
    // A failing message makes the backend skip to the sync at the end of the same pass, so it is ready again when
    // the error is thrown.
    return pglite.execProtocolStream(Buffer.concat(parts), { syncToFs: false });
  }

  async function describe(name: string, sql: string): Promise<Described> {
    const messages = await exchange([
      serialize.parse({ name, text: sql }),
      serialize.describe({ type: 'S', name }),
      serialize.sync(),
    ]);
    const found: Described = {
      paramTypes: parse.parseDescribeStatementResults(messages),
      rowDescription: messages.find((m) => m.name === 'rowDescription'),
    };
    described.set(name, found);
    return found;
  }

  return {
    async run(sql, params = []) {
      const name = preparedName(sql);
      // A closed database answers through query(), with PGlite's own error.
      if (name === undefined || pglite.closed) return undefined;
      return pglite._runExclusiveTransaction(() =>
        pglite._runExclusiveQuery(async () => {
          const statement = described.get(name) ?? (await describe(name, sql));
          const values = params.map((value, i) => {
            if (value === null || value === undefined) return null;
            const serializer = pglite.serializers[statement.paramTypes[i]!];
            return serializer ? serializer(value) : String(value);
          });
          const messages = await exchange([
            serialize.bind({ statement: name, values }),
            serialize.execute({}),
            serialize.sync(),
          ]);
          if (!pglite.isInTransaction()) await pglite.syncToFs();
          const head = statement.rowDescription ? [statement.rowDescription] : [];
          const [result] = parse.parseResults([...head, ...messages], pglite.parsers);
          return { rows: result?.rows ?? [], affectedRows: result?.affectedRows ?? 0 };
        }),
      );
    },
  };
}
