import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from '@dispersa/sdk';
import { UsageError } from '../args.ts';
import type { CommandContext } from '../command.ts';
import { resolveAdminConnection } from '../connection.ts';
import { type AdminApi, createAdminApi, queryString } from '../http-json.ts';
import { listing } from '../listing.ts';

/** Operator commands: one call each to the operator API (operator contract, section 4), the payload printed. */

async function adminApi(ctx: CommandContext): Promise<AdminApi> {
  const { adminUrl, token } = await resolveAdminConnection(ctx);
  return createAdminApi(adminUrl, token);
}

const id = (value: string) => encodeURIComponent(value);

/** A whole number of minor units as text; checked here so that a typo never reaches the ledger. */
function minorFlag(ctx: CommandContext, name: string): string {
  const value = ctx.flags.required(name);
  if (!/^[0-9]{1,30}$/.test(value)) throw new UsageError(`--${name} must be whole minor units, e.g. 150000`, ctx.name);
  return value;
}

export async function clientsCreate(ctx: CommandContext): Promise<unknown> {
  const body = { name: ctx.flags.required('name'), currency: ctx.flags.required('currency') };
  return (await adminApi(ctx)).call('POST', '/admin/v1/clients', body);
}

export async function clientsGet(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', `/admin/v1/clients/${id(ctx.positionals[0]!)}`);
}

export async function keysCreate(ctx: CommandContext): Promise<unknown> {
  const file = path.resolve(ctx.io.cwd, ctx.flags.required('public-key-file'));
  let publicKeyPem: string;
  try {
    publicKeyPem = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`, ctx.name);
  }
  const api = await adminApi(ctx);
  const created = await api.call('POST', `/admin/v1/clients/${id(ctx.positionals[0]!)}/keys`, { publicKeyPem });
  ctx.note(
    'the apiKey is shown only now; store it. New keys have no limits: set them with `dispersa admin limits set`',
  );
  return created;
}

export async function keysDeactivate(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('POST', `/admin/v1/keys/${id(ctx.positionals[0]!)}/deactivate`);
}

/** --limit RAIL:PER_PAYMENT_MAX:DAILY_MAX, repeated once per rail. */
export function parseLimitFlag(text: string): { rail: string; perPaymentMaxMinor: string; dailyMaxMinor: string } {
  const match = /^([A-Za-z]+):([0-9]{1,30}):([0-9]{1,30})$/.exec(text);
  if (match === null) {
    throw new UsageError(
      `--limit must be RAIL:PER_PAYMENT_MAX_MINOR:DAILY_MAX_MINOR (e.g. PM:5000000:50000000), got "${text}"`,
    );
  }
  return { rail: match[1]!.toUpperCase(), perPaymentMaxMinor: match[2]!, dailyMaxMinor: match[3]! };
}

export async function limitsSet(ctx: CommandContext): Promise<unknown> {
  const entries = ctx.flags.list('limit');
  if (entries.length === 0) throw new UsageError('give at least one --limit RAIL:PER_PAYMENT:DAILY', ctx.name);
  const limits = entries.map(parseLimitFlag);
  return (await adminApi(ctx)).call('PUT', `/admin/v1/keys/${id(ctx.positionals[0]!)}/limits`, { limits });
}

export async function fundingsCreate(ctx: CommandContext): Promise<unknown> {
  const body = { amountMinor: minorFlag(ctx, 'amount-minor'), reference: ctx.flags.required('reference') };
  return (await adminApi(ctx)).call('POST', `/admin/v1/clients/${id(ctx.positionals[0]!)}/fundings`, body);
}

function isoFlag(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.flags.string(name);
  if (value === undefined) return undefined;
  if (Number.isNaN(Date.parse(value)))
    throw new UsageError(`--${name} must be an ISO 8601 time, got "${value}"`, ctx.name);
  return new Date(value).toISOString();
}

export async function ratesPublish(ctx: CommandContext): Promise<unknown> {
  const rate = ctx.flags.required('rate');
  if (!/^[0-9]+(\.[0-9]{1,12})?$/.test(rate)) {
    throw new UsageError('--rate must be decimal text with at most 12 decimals, e.g. 36.5', ctx.name);
  }
  let expiresAt = isoFlag(ctx, 'expires-at');
  const expiresIn = ctx.flags.integer('expires-in-seconds');
  if ((expiresAt === undefined) === (expiresIn === undefined)) {
    throw new UsageError('give exactly one of --expires-at TIME or --expires-in-seconds N', ctx.name);
  }
  expiresAt ??= new Date(Date.now() + expiresIn! * 1000).toISOString();
  const body: Record<string, string> = { base: ctx.flags.required('base').toUpperCase(), rate, expiresAt };
  const validFrom = isoFlag(ctx, 'valid-from');
  if (validFrom !== undefined) body['validFrom'] = validFrom;
  const clientId = ctx.flags.string('client-id');
  if (clientId !== undefined) body['clientId'] = clientId;
  return (await adminApi(ctx)).call('POST', '/admin/v1/rates', body);
}

export async function paymentsList(ctx: CommandContext): Promise<unknown> {
  const api = await adminApi(ctx);
  const filters = {
    state: ctx.flags.string('state'),
    subStatus: ctx.flags.string('sub-status'),
    clientId: ctx.flags.string('client-id'),
    limit: ctx.flags.integer('limit'),
  };
  return listing(
    ctx,
    'payments',
    async (cursor) =>
      (await api.call('GET', `/admin/v1/payments${queryString({ ...filters, cursor })}`)) as Page<unknown>,
  );
}

export async function paymentsResolve(ctx: CommandContext): Promise<unknown> {
  const outcome = ctx.flags.required('outcome');
  if (outcome !== 'completed' && outcome !== 'failed') {
    throw new UsageError('--outcome must be completed or failed', ctx.name);
  }
  const body = { outcome, note: ctx.flags.required('note') };
  return (await adminApi(ctx)).call('POST', `/admin/v1/payments/${id(ctx.positionals[0]!)}/resolve`, body);
}

export async function exceptionsList(ctx: CommandContext): Promise<unknown> {
  const api = await adminApi(ctx);
  const filters = {
    status: ctx.flags.string('status'),
    kind: ctx.flags.string('kind'),
    limit: ctx.flags.integer('limit'),
  };
  return listing(
    ctx,
    'exceptions',
    async (cursor) =>
      (await api.call(
        'GET',
        `/admin/v1/reconciliation/exceptions${queryString({ ...filters, cursor })}`,
      )) as Page<unknown>,
  );
}

export async function exceptionsGet(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', `/admin/v1/reconciliation/exceptions/${id(ctx.positionals[0]!)}`);
}

export async function exceptionsResolve(ctx: CommandContext): Promise<unknown> {
  const body: Record<string, string> = { note: ctx.flags.required('note') };
  const resolvedBy = ctx.flags.string('resolved-by');
  if (resolvedBy !== undefined) body['resolvedBy'] = resolvedBy;
  return (await adminApi(ctx)).call(
    'POST',
    `/admin/v1/reconciliation/exceptions/${id(ctx.positionals[0]!)}/resolve`,
    body,
  );
}

export async function reconciliationStatus(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', '/admin/v1/reconciliation/status');
}

export async function ratesList(ctx: CommandContext): Promise<unknown> {
  const api = await adminApi(ctx);
  const filters = {
    base: ctx.flags.string('base')?.toUpperCase(),
    clientId: ctx.flags.string('client-id'),
    limit: ctx.flags.integer('limit'),
  };
  return listing(
    ctx,
    'rates',
    async (cursor) => (await api.call('GET', `/admin/v1/rates${queryString({ ...filters, cursor })}`)) as Page<unknown>,
  );
}

export async function webhooksDeliveries(ctx: CommandContext): Promise<unknown> {
  const api = await adminApi(ctx);
  const filters = { clientId: ctx.flags.string('client-id'), limit: ctx.flags.integer('limit') };
  return listing(
    ctx,
    'deliveries',
    async (cursor) =>
      (await api.call('GET', `/admin/v1/webhooks/deliveries${queryString({ ...filters, cursor })}`)) as Page<unknown>,
  );
}

export async function webhooksRedeliver(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('POST', `/admin/v1/webhooks/events/${id(ctx.positionals[0]!)}/redeliver`);
}

export async function webhooksClient(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', `/admin/v1/webhooks/clients/${id(ctx.positionals[0]!)}`);
}

export async function webhooksKeys(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', '/admin/v1/webhooks/keys');
}

export async function webhooksRotateKey(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('POST', '/admin/v1/webhooks/keys/rotate');
}

export async function webhooksRetireKey(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('POST', `/admin/v1/webhooks/keys/${id(ctx.positionals[0]!)}/retire`);
}

export async function statementsLines(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('GET', '/admin/v1/sandbox/bank/lines');
}

export async function statementsAddLine(ctx: CommandContext): Promise<unknown> {
  const api = await adminApi(ctx);
  const duplicateOf = ctx.flags.string('duplicate-of');
  // A duplicate copies its original byte for byte, so it takes nothing else.
  if (duplicateOf !== undefined) return api.call('POST', '/admin/v1/sandbox/bank/lines', { duplicateOf });
  const direction = ctx.flags.required('direction');
  if (direction !== 'debit' && direction !== 'credit') {
    throw new UsageError('--direction must be debit or credit', ctx.name);
  }
  const body: Record<string, string> = {
    direction,
    amountMinor: minorFlag(ctx, 'amount-minor'),
    reference: ctx.flags.required('reference'),
  };
  const currency = ctx.flags.string('currency');
  if (currency !== undefined) body['currency'] = currency.toUpperCase();
  return api.call('POST', '/admin/v1/sandbox/bank/lines', body);
}

export async function statementsSuppressDebit(ctx: CommandContext): Promise<unknown> {
  return (await adminApi(ctx)).call('POST', '/admin/v1/sandbox/bank/suppress-debit', {
    paymentId: ctx.positionals[0]!,
  });
}

/**
 * Imports a bank statement file (camt.053 XML or CSV). The file is parsed here first, with the same parsers the
 * service uses, so a broken file is refused with its line number before anything is sent.
 */
export const STATEMENT_IMPORT_PATH = '/admin/v1/reconciliation/statements';

export async function statementsImport(ctx: CommandContext): Promise<unknown> {
  const file = path.resolve(ctx.io.cwd, ctx.positionals[0]!);
  const format = ctx.flags.string('format') ?? (/\.xml$/i.test(file) ? 'camt053' : 'csv');
  if (format !== 'camt053' && format !== 'csv') throw new UsageError('--format must be camt053 or csv', ctx.name);
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`, ctx.name);
  }
  const progress = ctx.progress(`statement ${path.basename(file)}`);
  const parser =
    format === 'camt053'
      ? (await import('../../statements/camt053.ts')).parseCamt053
      : (await import('../../statements/csv.ts')).parseStatementCsv;
  const parsed = parser(content);
  if (!parsed.ok) throw new UsageError(`${file}: ${parsed.error}`, ctx.name);
  progress.update(parsed.lines.length, 'lines parsed, sending');
  const api = await adminApi(ctx);
  const result = await api.call('POST', STATEMENT_IMPORT_PATH, { format, content });
  progress.done(`${parsed.lines.length} lines sent`);
  return result;
}
