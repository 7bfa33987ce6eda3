import type { FastifyInstance } from 'fastify';
import { getClient } from '../clients/service.ts';
import type { Queryable } from '../db/db.ts';
import { enveloped } from '../http/envelope.ts';
import { httpError } from '../http/errors.ts';
import { registerQuoteListingRoute } from './quote-listing.ts';
import { listRatePublications } from './rate-history.ts';
import { PUBLISH_RATE_STATUS, type PublishRateInput, type RateService, toPublicRate } from './rates.ts';

export interface FxAdminRouteDeps {
  db: Queryable;
  rates: RateService;
}

const PUBLISH_FIELDS = ['base', 'rate', 'expiresAt', 'validFrom', 'clientId'] as const;
const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

type ParsedBody = { ok: true; input: PublishRateInput } | { ok: false; message: string };

/**
 * Shape checks of POST /admin/v1/rates; the value rules (currency, precision, times, client) are the rate
 * service's. Unknown fields are refused: a misspelt `valid_from` would otherwise publish silently from now.
 */
function parsePublishBody(body: unknown): ParsedBody {
  const fields = (body ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!(PUBLISH_FIELDS as readonly string[]).includes(name)) {
      return { ok: false, message: `unknown field ${name} (expected ${PUBLISH_FIELDS.join(', ')})` };
    }
  }
  for (const name of ['base', 'rate', 'expiresAt'] as const) {
    if (fields[name] === undefined || fields[name] === null) return { ok: false, message: `${name} is required` };
  }
  for (const name of PUBLISH_FIELDS) {
    const value = fields[name];
    if (value !== undefined && value !== null && typeof value !== 'string') {
      // A number rate would already have lost precision in JSON parsing; say so rather than round it.
      return { ok: false, message: `${name} must be a string${name === 'rate' ? ' of decimal text' : ''}` };
    }
  }
  if (fields['clientId'] === '')
    return { ok: false, message: 'clientId must not be empty (omit it for the general rate)' };
  return {
    ok: true,
    input: {
      base: fields['base'] as string,
      rate: fields['rate'] as string,
      expiresAt: fields['expiresAt'] as string,
      validFrom: (fields['validFrom'] as string | null | undefined) ?? null,
      clientId: (fields['clientId'] as string | null | undefined) ?? null,
      source: 'operator',
    },
  };
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_PAGE;
  if (!/^[1-9][0-9]{0,5}$/.test(text)) throw httpError(400, 'limit must be a positive integer');
  return Math.min(Number(text), MAX_PAGE);
}

function single(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw httpError(400, `${name} must be given once`);
  return value;
}

/** Operator API of rates: publish one, and list recent publications. */
export function registerFxAdminRoutes(app: FastifyInstance, deps: FxAdminRouteDeps): void {
  const { db, rates } = deps;

  app.post('/admin/v1/rates', async (request, reply) => {
    const parsed = parsePublishBody(request.body);
    if (!parsed.ok) throw httpError(400, parsed.message);
    const result = await rates.publish(parsed.input);
    if (result.kind !== 'published') throw httpError(PUBLISH_RATE_STATUS[result.kind], result.message);
    return enveloped(request, reply, toPublicRate(result.rate), { code: PUBLISH_RATE_STATUS.published });
  });

  registerQuoteListingRoute(app, { db });

  app.get('/admin/v1/rates', async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const base = single(query['base'], 'base');
    const clientId = single(query['clientId'], 'clientId');
    const cursor = single(query['cursor'], 'cursor');
    const limit = parseLimit(single(query['limit'], 'limit'));
    if (base !== undefined && !/^[A-Z]{3}$/.test(base)) throw httpError(400, 'base must be a 3-letter currency code');
    // An unknown client is far more likely a typo than a client with no rates; an empty page would hide it.
    if (clientId !== undefined && (await getClient(db, clientId)) === null) {
      throw httpError(404, `unknown client ${clientId}`);
    }
    const result = await listRatePublications(db, {
      base: base ?? null,
      clientId: clientId ?? null,
      after: cursor ?? null,
      limit,
    });
    if (result.kind === 'bad_cursor') throw httpError(400, result.message);
    const { data, hasMore, nextCursor } = result;
    return enveloped(request, reply, { data, hasMore, nextCursor });
  });
}
