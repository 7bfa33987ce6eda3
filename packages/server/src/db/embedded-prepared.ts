import { type PGlite, parse, protocol, messages as protocolMessages, types } from '@electric-sql/pglite';
import { type AnswerColumn, readAnswer } from './embedded-answer.ts';
import { bindExecuteSync } from './embedded-bind.ts';
import { preparedName } from './prepared.ts';

/**
 * Prepared statements (prepared.ts) on the embedded database. PGlite's query() sends each protocol message into
 * the WASM backend on its own (parse, describe, bind, describe, execute, sync): six passes for one statement, which
 * cost a parameterised one-row SELECT 380 us against 65 us for one pass with a named statement on this machine.
 * Here a declared statement is parsed and described once, then each call is one pass: bind, execute, sync, written
 * by embedded-bind.ts.
 *
 * Values go in as text through PGlite's own serializers of the parameter types the describe reported, and rows come
 * back through its own parsers (so int8 and numeric stay strings, as the embedded back-end configures them), read
 * from the answer's bytes by embedded-answer.ts: the answers are those of query(). The statement runs under both of
 * PGlite's locks, as query() does, so it never lands between the statements of someone else's transaction. A failing
 * message makes the backend skip to the sync at the end of the same pass, so it is ready again when the error is
 * thrown.
 */

interface Described {
  paramTypes: number[];
  /** The columns of its rows (none for a statement that returns no rows), each with PGlite's parser for its type. */
  columns: AnswerColumn[];
}

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
  const { RowDescriptionMessage } = protocolMessages;

  async function describe(name: string, sql: string): Promise<Described> {
    const messages = await pglite.execProtocolStream(
      Buffer.concat([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]),
      { syncToFs: false },
    );
    const rowDescription = messages.find((m) => m instanceof RowDescriptionMessage);
    const fields = rowDescription?.fields ?? [];
    const found: Described = {
      paramTypes: parse.parseDescribeStatementResults(messages),
      columns: fields.map((f) => ({
        name: f.name,
        typeId: f.dataTypeID,
        parse: pglite.parsers[f.dataTypeID] ?? types.parsers[f.dataTypeID],
      })),
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
          // The answer's bytes as they come (a view into the engine's memory, so copied), read by readAnswer.
          const chunks: Buffer[] = [];
          const message =
            bindExecuteSync(name, values) ??
            Buffer.concat([serialize.bind({ statement: name, values }), serialize.execute({}), serialize.sync()]);
          await pglite.execProtocolRawStream(message, {
            syncToFs: false,
            onRawData: (data) => void chunks.push(Buffer.from(data)),
          });
          if (!pglite.isInTransaction()) await pglite.syncToFs();
          return readAnswer(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), statement.columns);
        }),
      );
    },
  };
}
