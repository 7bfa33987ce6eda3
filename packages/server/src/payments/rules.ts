import type { RailCode, ServiceLimit } from '../config.ts';
import type { Queryable } from '../db/db.ts';
import { effectiveLimits } from '../limits/service.ts';
import { dailyTotal } from './repository.ts';

/**
 * Business rules checked before any money moves. A violation is a 422 that still creates the payment, failed,
 * with the code below as failureCode (spec, Errors: 422).
 */
export type RuleViolation =
  | 'limits_not_configured'
  | 'limit_exceeded'
  | 'daily_limit_exceeded'
  | 'insufficient_balance'
  | 'quote_expired';

export const VIOLATION_MESSAGE: Record<RuleViolation, string> = {
  limits_not_configured: 'limits policy of this key is not configured for the rail',
  limit_exceeded: 'amount exceeds the per-payment limit of this key',
  daily_limit_exceeded: 'amount exceeds the remaining daily limit of this key',
  insufficient_balance: 'insufficient balance',
  quote_expired: 'quote expired',
};

const startOfUtcDay = (at: Date): Date => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));

/**
 * Checks the key's limits on the rail. Locks the key's limit row first, so that concurrent payments of one key
 * see each other's amounts in the daily total.
 */
export async function checkLimits(
  q: Queryable,
  input: { keyId: string; rail: RailCode; amountMinor: bigint; now: Date; serviceLimits: readonly ServiceLimit[] },
): Promise<RuleViolation | null> {
  const lock = await q.query('SELECT 1 FROM key_limits WHERE key_id = $1 AND rail = $2 FOR UPDATE', [
    input.keyId,
    input.rail,
  ]);
  if (lock.rowCount === 0) return 'limits_not_configured';
  const limit = (await effectiveLimits(q, input.keyId, input.serviceLimits)).find((l) => l.rail === input.rail);
  if (limit === undefined) return 'limits_not_configured';
  if (input.amountMinor > limit.perPaymentMaxMinor) return 'limit_exceeded';
  const spent = await dailyTotal(q, input.keyId, input.rail, startOfUtcDay(input.now));
  if (spent + input.amountMinor > limit.dailyMaxMinor) return 'daily_limit_exceeded';
  return null;
}
