import type { RailCode, ServiceLimit } from '../config.ts';
import type { Queryable } from '../db/db.ts';
import { effectiveLimits } from '../limits/service.ts';

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

/**
 * Checks that the key has limits on the rail and that the amount fits one payment. The daily allowance is taken
 * separately (takeDailyAllowance), once the funds are held.
 */
export async function checkLimits(
  q: Queryable,
  input: { keyId: string; rail: RailCode; amountMinor: bigint; serviceLimits: readonly ServiceLimit[] },
): Promise<{ violation: RuleViolation } | { violation: null; dailyMaxMinor: bigint }> {
  const limit = (await effectiveLimits(q, input.keyId, input.serviceLimits)).find((l) => l.rail === input.rail);
  if (limit === undefined) return { violation: 'limits_not_configured' };
  if (input.amountMinor > limit.perPaymentMaxMinor) return { violation: 'limit_exceeded' };
  if (input.amountMinor > limit.dailyMaxMinor) return { violation: 'daily_limit_exceeded' };
  return { violation: null, dailyMaxMinor: limit.dailyMaxMinor };
}

const UTC_DAY = "($3::timestamptz AT TIME ZONE 'UTC')::date";

/**
 * Takes the amount from the key's allowance of the UTC day in one conditional statement: false (nothing taken)
 * when it would exceed the daily limit. Concurrent payments of one key serialise on that one row.
 */
export async function takeDailyAllowance(
  q: Queryable,
  input: { keyId: string; rail: RailCode; at: Date; amountMinor: bigint; dailyMaxMinor: bigint },
): Promise<boolean> {
  const { rows } = await q.query(
    `INSERT INTO key_daily_usage (key_id, rail, day, used_minor) VALUES ($1, $2, ${UTC_DAY}, $4)
     ON CONFLICT (key_id, rail, day) DO UPDATE SET used_minor = key_daily_usage.used_minor + EXCLUDED.used_minor
     WHERE key_daily_usage.used_minor + EXCLUDED.used_minor <= $5
     RETURNING used_minor`,
    [input.keyId, input.rail, input.at, input.amountMinor.toString(), input.dailyMaxMinor.toString()],
  );
  return rows.length > 0;
}

/** A payment that failed gives its amount back to the allowance of the day it was made. */
export async function returnDailyAllowance(
  q: Queryable,
  input: { keyId: string; rail: RailCode; madeAt: Date; amountMinor: bigint },
): Promise<void> {
  await q.query(
    `UPDATE key_daily_usage SET used_minor = greatest(used_minor - $4, 0)
     WHERE key_id = $1 AND rail = $2 AND day = ${UTC_DAY}`,
    [input.keyId, input.rail, input.madeAt, input.amountMinor.toString()],
  );
}
