import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type AmountType,
  type BeneficiaryParams,
  isFinalState,
  type Payment,
  type PaymentParams,
  type RequestOptions,
} from '@dispersa/sdk';
import { UsageError } from '../args.ts';
import type { CommandContext } from '../command.ts';
import { resolveBaseUrl } from '../connection.ts';
import { payloadOf, requestJson } from '../http-json.ts';
import { fetchJwks } from '../jwks.ts';
import { listing } from '../listing.ts';
import { openClient } from '../sdk-client.ts';

/** Client commands: one SDK call each, the payload printed as JSON. */

/** Flags whose value is copied into a request body under the camelCase name. */
function copyFlags(ctx: CommandContext, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = ctx.flags.string(name);
    if (value !== undefined) out[name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return out;
}

function idempotencyKeyFor(ctx: CommandContext): string {
  const given = ctx.flags.string('idempotency-key');
  if (given !== undefined) return given;
  const made = randomUUID();
  // Printed before the request goes out: if the answer never arrives, this key is how to retry safely.
  ctx.note(`idempotency-key ${made} (made up; rerun with --idempotency-key ${made} to retry this same operation)`);
  return made;
}

export async function version(ctx: CommandContext): Promise<unknown> {
  // Public and unsigned: needs no credentials, so it is the first thing to try against a new deployment.
  return payloadOf(await requestJson({ method: 'GET', url: `${await resolveBaseUrl(ctx)}/v2/version` }));
}

export async function me(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).me();
}

export async function balance(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).balance();
}

export async function rate(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).rate();
}

export async function quote(ctx: CommandContext): Promise<unknown> {
  const amountType = ctx.flags.required('amount-type').toUpperCase();
  if (amountType !== 'SOURCE' && amountType !== 'TARGET') {
    throw new UsageError('--amount-type must be SOURCE or TARGET', ctx.name);
  }
  const amountMinor = ctx.flags.required('amount-minor');
  const client = await openClient(ctx);
  return client.quotes.create(
    { amountType: amountType as AmountType, amountMinor },
    { idempotencyKey: idempotencyKeyFor(ctx) },
  );
}

const INLINE_FLAGS = ['rail', 'beneficiary', 'bank-code', 'doc-type', 'doc-number', 'beneficiary-name'] as const;

export async function pay(ctx: CommandContext): Promise<unknown> {
  const amountMinor = ctx.flags.required('amount-minor');
  const beneficiaryId = ctx.flags.string('beneficiary-id');
  const inline = copyFlags(ctx, INLINE_FLAGS);
  if (beneficiaryId === undefined && inline['rail'] === undefined && inline['beneficiary'] === undefined) {
    throw new UsageError(
      'say where the money goes: --beneficiary-id B, or --rail, --beneficiary, --bank-code, --doc-type, --doc-number',
      ctx.name,
    );
  }
  // Mixed or incomplete destinations go to the service as given: its 400 names the field, and creates nothing.
  const params = {
    amountMinor,
    currency: ctx.flags.string('currency') ?? 'VES',
    ...copyFlags(ctx, ['beneficiary-id']),
    ...inline,
    ...copyFlags(ctx, ['quote-id']),
  } as unknown as PaymentParams;
  const client = await openClient(ctx);
  const options: RequestOptions = { idempotencyKey: idempotencyKeyFor(ctx) };
  const payment = await client.payments.create(params, options);
  warnIfUnknown(ctx, payment);
  return payment;
}

function warnIfUnknown(ctx: CommandContext, payment: Payment): void {
  if (payment.state !== 'unknown') return;
  ctx.note(
    `payment ${payment.intentId} is unknown (${payment.subStatus ?? 'no detail'}): money may or may not have moved. ` +
      `Do NOT pay again; reconciliation resolves it. Follow it with: dispersa payments get ${payment.intentId} --wait`,
  );
}

export async function paymentsGet(ctx: CommandContext): Promise<unknown> {
  const [id] = ctx.positionals as [string];
  const client = await openClient(ctx);
  let payment = await client.payments.get(id);
  if (!ctx.flags.boolean('wait')) {
    warnIfUnknown(ctx, payment);
    return payment;
  }
  // Polling GET is the source of truth (webhooks only make it faster). Bounded: it never waits forever.
  const deadline = Date.now() + (ctx.flags.integer('timeout-seconds') ?? 60) * 1000;
  const interval = Math.max(100, ctx.flags.integer('interval-ms') ?? 1000);
  const progress = ctx.progress(`payment ${id}`);
  let polls = 1;
  while (!isFinalState(payment.state) && Date.now() + interval <= deadline) {
    progress.update(polls, `${payment.state}${payment.subStatus ? `/${payment.subStatus}` : ''}`);
    await delay(interval, undefined, { signal: ctx.io.signal }).catch(() => undefined);
    if (ctx.io.signal.aborted) break;
    payment = await client.payments.get(id);
    polls += 1;
  }
  progress.done(`${payment.state} after ${polls} read${polls === 1 ? '' : 's'}`);
  if (!isFinalState(payment.state)) {
    ctx.note(`payment ${id} is still ${payment.state}; not final yet (do not pay again)`);
  }
  return payment;
}

export async function paymentsList(ctx: CommandContext): Promise<unknown> {
  const client = await openClient(ctx);
  const status = ctx.flags.string('status');
  const limit = ctx.flags.integer('limit');
  return listing(ctx, 'payments', (cursor) =>
    client.payments.list({
      ...(status === undefined ? {} : { status }),
      ...(limit === undefined ? {} : { limit }),
      ...(cursor === undefined ? {} : { cursor }),
    }),
  );
}

export async function beneficiariesCreate(ctx: CommandContext): Promise<unknown> {
  ctx.flags.required('alias');
  const params = copyFlags(ctx, ['rail', 'account', ...INLINE_FLAGS.slice(2), 'alias']) as unknown as BeneficiaryParams;
  return (await openClient(ctx)).beneficiaries.create(params);
}

export async function beneficiariesList(ctx: CommandContext): Promise<unknown> {
  const client = await openClient(ctx);
  const limit = ctx.flags.integer('limit');
  return listing(ctx, 'beneficiaries', (cursor) =>
    client.beneficiaries.list({
      ...(limit === undefined ? {} : { limit }),
      ...(cursor === undefined ? {} : { cursor }),
    }),
  );
}

export async function beneficiariesGet(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).beneficiaries.get(ctx.positionals[0]!);
}

export async function beneficiariesUpdate(ctx: CommandContext): Promise<unknown> {
  const alias = ctx.flags.required('alias');
  return (await openClient(ctx)).beneficiaries.update(ctx.positionals[0]!, { alias });
}

export async function beneficiariesArchive(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).beneficiaries.archive(ctx.positionals[0]!);
}

export async function webhookGet(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).webhook.get();
}

export async function webhookSet(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).webhook.set(ctx.positionals[0]!);
}

export async function webhookTest(ctx: CommandContext): Promise<unknown> {
  return (await openClient(ctx)).webhook.test();
}

export async function webhookKeys(ctx: CommandContext): Promise<unknown> {
  return fetchJwks(ctx, `${await resolveBaseUrl(ctx)}/v2/webhook/keys`);
}
