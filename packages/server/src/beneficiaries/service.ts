import type { Db } from '../db/db.ts';
import type { Clock } from '../shared/clock.ts';
import type { Beneficiary, NewBeneficiary } from './model.ts';
import { type Page, pageOf } from './paging.ts';
import * as repo from './repository.ts';

/** Expected failures of the beneficiary operations; routes map each to a status (errors.ts). */
export type BeneficiaryError =
  | { kind: 'not_found' }
  /** The row exists but is archived: PATCH answers 404 (spec), and archived rows never change. */
  | { kind: 'archived' }
  /** existingId: the ACTIVE holder of that rail and account, when it was still ACTIVE as we looked. */
  | { kind: 'duplicate_destination'; existingId: string | null };

export type BeneficiaryResult = { ok: true; beneficiary: Beneficiary } | { ok: false; error: BeneficiaryError };

export interface BeneficiaryService {
  create(clientId: string, input: NewBeneficiary): Promise<BeneficiaryResult>;
  get(clientId: string, id: string): Promise<BeneficiaryResult>;
  list(clientId: string, page: { beforeSeq: bigint | null; limit: number }): Promise<Page<Beneficiary>>;
  rename(clientId: string, id: string, alias: string): Promise<BeneficiaryResult>;
  /** Idempotent: archiving an archived beneficiary answers it unchanged. */
  archive(clientId: string, id: string): Promise<BeneficiaryResult>;
}

const fail = (error: BeneficiaryError): BeneficiaryResult => ({ ok: false, error });
const found = (b: Beneficiary | null): BeneficiaryResult =>
  b ? { ok: true, beneficiary: b } : fail({ kind: 'not_found' });

export function createBeneficiaryService(deps: { db: Db; clock: Clock }): BeneficiaryService {
  const { db, clock } = deps;
  return {
    async create(clientId, input) {
      const inserted = await repo.insertBeneficiary(db, clientId, input, clock.now());
      if (inserted.kind === 'created') return { ok: true, beneficiary: inserted.beneficiary };
      // Only to help the caller's replace flow; the conflict itself was decided by the unique index.
      const holder = await repo.findActiveByDestination(
        db,
        clientId,
        input.destination.rail,
        input.destination.account,
      );
      return fail({ kind: 'duplicate_destination', existingId: holder?.id ?? null });
    },

    async get(clientId, id) {
      return found(await repo.findById(db, clientId, id));
    },

    async list(clientId, page) {
      const { items, hasMore } = await repo.listPage(db, clientId, page.beforeSeq, page.limit);
      return pageOf(items, hasMore);
    },

    async rename(clientId, id, alias) {
      const updated = await repo.updateAlias(db, clientId, id, alias);
      if (updated) return { ok: true, beneficiary: updated };
      const current = await repo.findById(db, clientId, id);
      return fail({ kind: current ? 'archived' : 'not_found' });
    },

    async archive(clientId, id) {
      const archived = await repo.archive(db, clientId, id, clock.now());
      if (archived) return { ok: true, beneficiary: archived };
      // Not ACTIVE: either already archived (answered as it is) or not this client's.
      return found(await repo.findById(db, clientId, id));
    },
  };
}
