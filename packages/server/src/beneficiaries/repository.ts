import type { RailCode } from '../config.ts';
import { isUniqueViolation, type Queryable } from '../db/db.ts';
import type { DocType } from '../rails/rail.ts';
import type { Beneficiary, BeneficiaryStatus, NewBeneficiary } from './model.ts';

/** The only SQL of the domain. Every query is scoped by client_id: another client's row is simply not there. */

interface Row {
  id: string;
  client_id: string;
  alias: string;
  rail: RailCode;
  account: string;
  bank_code: string | null;
  doc_type: DocType;
  doc_number: string;
  beneficiary_name: string | null;
  status: BeneficiaryStatus;
  created_at: Date;
}

const COLUMNS =
  'id, client_id, alias, rail, account, bank_code, doc_type, doc_number, beneficiary_name, status, created_at';

/** The index that makes "one ACTIVE beneficiary per client, rail and account" a database fact. */
const ACTIVE_DESTINATION_INDEX = 'beneficiaries_active_destination';

function fromRow(r: Row): Beneficiary {
  return {
    id: r.id,
    clientId: r.client_id,
    alias: r.alias,
    status: r.status,
    createdAt: new Date(r.created_at),
    destination: {
      rail: r.rail,
      account: r.account,
      bankCode: r.bank_code,
      docType: r.doc_type,
      docNumber: r.doc_number,
      beneficiaryName: r.beneficiary_name,
    },
  };
}

export type InsertResult = { kind: 'created'; beneficiary: Beneficiary } | { kind: 'duplicate' };

export async function insertBeneficiary(
  q: Queryable,
  clientId: string,
  input: NewBeneficiary,
  createdAt: Date,
): Promise<InsertResult> {
  const d = input.destination;
  try {
    // One statement: the id is derived from the sequence value it draws, and the unique index decides races.
    const { rows } = await q.query<Row>(
      `WITH s AS (SELECT nextval('beneficiaries_seq') AS seq)
       INSERT INTO beneficiaries (id, seq, client_id, alias, rail, account, bank_code, doc_type, doc_number,
                                  beneficiary_name, status, created_at)
       SELECT 'ben_' || lpad(s.seq::text, 16, '0'), s.seq, $1, $2, $3, $4, $5, $6, $7, $8, 'ACTIVE', $9 FROM s
       RETURNING ${COLUMNS}`,
      [clientId, input.alias, d.rail, d.account, d.bankCode, d.docType, d.docNumber, d.beneficiaryName, createdAt],
    );
    return { kind: 'created', beneficiary: fromRow(rows[0]!) };
  } catch (err) {
    if (isUniqueViolation(err, ACTIVE_DESTINATION_INDEX)) return { kind: 'duplicate' };
    throw err;
  }
}

export async function findActiveByDestination(
  q: Queryable,
  clientId: string,
  rail: RailCode,
  account: string,
): Promise<Beneficiary | null> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM beneficiaries WHERE client_id = $1 AND rail = $2 AND account = $3 AND status = 'ACTIVE'`,
    [clientId, rail, account],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/**
 * lock 'share': inside a transaction, an archive of this row waits until that transaction ends (and a pending
 * archive is waited for and then seen), so a payment cannot commit against a beneficiary archived before it.
 */
export async function findById(
  q: Queryable,
  clientId: string,
  id: string,
  options: { lock?: 'share' } = {},
): Promise<Beneficiary | null> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM beneficiaries WHERE client_id = $1 AND id = $2${options.lock === 'share' ? ' FOR SHARE' : ''}`,
    [clientId, id],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** One page, newest first: rows with seq below `beforeSeq` (all when null), at most `limit`, plus whether more exist. */
export async function listPage(
  q: Queryable,
  clientId: string,
  beforeSeq: bigint | null,
  limit: number,
): Promise<{ items: Beneficiary[]; hasMore: boolean }> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM beneficiaries
      WHERE client_id = $1 AND ($2::bigint IS NULL OR seq < $2::bigint)
      ORDER BY seq DESC
      LIMIT $3`,
    [clientId, beforeSeq === null ? null : beforeSeq.toString(), limit + 1],
  );
  return { items: rows.slice(0, limit).map(fromRow), hasMore: rows.length > limit };
}

/** Changes the alias of an ACTIVE row; null when there is no ACTIVE row with that id for the client. */
export async function updateAlias(
  q: Queryable,
  clientId: string,
  id: string,
  alias: string,
): Promise<Beneficiary | null> {
  const { rows } = await q.query<Row>(
    `UPDATE beneficiaries SET alias = $3 WHERE client_id = $1 AND id = $2 AND status = 'ACTIVE' RETURNING ${COLUMNS}`,
    [clientId, id, alias],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** ACTIVE -> INACTIVE; null when there is no ACTIVE row with that id for the client. */
export async function archive(q: Queryable, clientId: string, id: string, at: Date): Promise<Beneficiary | null> {
  const { rows } = await q.query<Row>(
    `UPDATE beneficiaries SET status = 'INACTIVE', archived_at = $3
      WHERE client_id = $1 AND id = $2 AND status = 'ACTIVE' RETURNING ${COLUMNS}`,
    [clientId, id, at],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}
