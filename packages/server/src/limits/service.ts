import type { RailCode, ServiceLimit } from '../config.ts';
import { RAIL_CODES } from '../config.ts';
import type { Queryable } from '../db/db.ts';
import { formatMinor, minorFromDb } from '../shared/money.ts';

/**
 * Per-key payment limits: the client's own caps combined with the floors the service imposes on every key
 * (DISPERSA_SERVICE_LIMITS); the effective value per rail is the lower of the two.
 */

export interface KeyLimit {
  rail: RailCode;
  perPaymentMaxMinor: bigint;
  dailyMaxMinor: bigint;
}

export interface EffectiveLimit extends KeyLimit {
  client: { perPaymentMaxMinor: bigint; dailyMaxMinor: bigint };
  service: { perPaymentMaxMinor: bigint; dailyMaxMinor: bigint } | null;
}

export type SetLimitsResult = { ok: true } | { ok: false; error: string };

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

export function parseLimits(input: unknown): { ok: true; limits: KeyLimit[] } | { ok: false; error: string } {
  if (!Array.isArray(input))
    return { ok: false, error: 'limits is required: an array of { rail, perPaymentMaxMinor, dailyMaxMinor }' };
  const seen = new Set<string>();
  const out: KeyLimit[] = [];
  for (const [i, entry] of input.entries()) {
    if (typeof entry !== 'object' || entry === null) return { ok: false, error: `limits[${i}] must be an object` };
    const { rail, perPaymentMaxMinor, dailyMaxMinor } = entry as Record<string, unknown>;
    if (typeof rail !== 'string' || !RAIL_CODES.includes(rail as RailCode)) {
      return { ok: false, error: `limits[${i}].rail must be one of ${RAIL_CODES.join(', ')}` };
    }
    if (seen.has(rail)) return { ok: false, error: `limits[${i}].rail ${rail} appears twice` };
    seen.add(rail);
    for (const [field, value] of [
      ['perPaymentMaxMinor', perPaymentMaxMinor],
      ['dailyMaxMinor', dailyMaxMinor],
    ] as const) {
      if (typeof value !== 'string' || !/^[1-9][0-9]{0,17}$/.test(value)) {
        return { ok: false, error: `limits[${i}].${field} must be a string holding a positive integer of minor units` };
      }
    }
    out.push({
      rail: rail as RailCode,
      perPaymentMaxMinor: BigInt(perPaymentMaxMinor as string),
      dailyMaxMinor: BigInt(dailyMaxMinor as string),
    });
  }
  return { ok: true, limits: out };
}

/** Replaces the key's limits with the given entries (rails not listed lose their entry). */
export async function setKeyLimits(q: Queryable, keyId: string, limits: KeyLimit[]): Promise<void> {
  await q.query('DELETE FROM key_limits WHERE key_id = $1', [keyId]);
  for (const l of limits) {
    await q.query(
      'INSERT INTO key_limits (key_id, rail, per_payment_max_minor, daily_max_minor) VALUES ($1, $2, $3, $4)',
      [keyId, l.rail, l.perPaymentMaxMinor.toString(), l.dailyMaxMinor.toString()],
    );
  }
}

export async function effectiveLimits(
  q: Queryable,
  keyId: string,
  serviceLimits: readonly ServiceLimit[],
): Promise<EffectiveLimit[]> {
  const { rows } = await q.query<{ rail: RailCode; per_payment_max_minor: string; daily_max_minor: string }>(
    'SELECT rail, per_payment_max_minor, daily_max_minor FROM key_limits WHERE key_id = $1 ORDER BY rail DESC',
    [keyId],
  );
  return rows.map((r) => {
    const own = {
      perPaymentMaxMinor: minorFromDb(r.per_payment_max_minor),
      dailyMaxMinor: minorFromDb(r.daily_max_minor),
    };
    const svc = serviceLimits.find((s) => s.rail === r.rail);
    const service = svc ? { perPaymentMaxMinor: svc.perPaymentMaxMinor, dailyMaxMinor: svc.dailyMaxMinor } : null;
    return {
      rail: r.rail,
      perPaymentMaxMinor: service ? min(own.perPaymentMaxMinor, service.perPaymentMaxMinor) : own.perPaymentMaxMinor,
      dailyMaxMinor: service ? min(own.dailyMaxMinor, service.dailyMaxMinor) : own.dailyMaxMinor,
      client: own,
      service,
    };
  });
}

export function limitsConfigured(limits: readonly EffectiveLimit[], enabledRails: readonly RailCode[]): boolean {
  return enabledRails.every((rail) => limits.some((l) => l.rail === rail));
}

export function limitToPublic(l: EffectiveLimit) {
  return {
    rail: l.rail,
    perPaymentMaxMinor: formatMinor(l.perPaymentMaxMinor),
    dailyMaxMinor: formatMinor(l.dailyMaxMinor),
    client: {
      perPaymentMaxMinor: formatMinor(l.client.perPaymentMaxMinor),
      dailyMaxMinor: formatMinor(l.client.dailyMaxMinor),
    },
    service: l.service
      ? {
          perPaymentMaxMinor: formatMinor(l.service.perPaymentMaxMinor),
          dailyMaxMinor: formatMinor(l.service.dailyMaxMinor),
        }
      : null,
  };
}
