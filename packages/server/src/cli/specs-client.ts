import type { OptionSpecs } from './args.ts';
import type { CommandRun, CommandSpec, RunnerName } from './command.ts';
import { LISTING_OPTIONS } from './listing.ts';

/** The client commands: signed with the API key and its private key. Runners load lazily. */

type ClientModule = typeof import('./commands/client.ts');

const client = (name: RunnerName<ClientModule>) => async (): Promise<CommandRun> =>
  (await import('./commands/client.ts'))[name];

const IDEMPOTENCY: OptionSpecs = {
  'idempotency-key': {
    type: 'string',
    value: 'K',
    description: 'key of this logical operation; made up and printed on stderr when absent',
  },
};

const DESTINATION: OptionSpecs = {
  rail: { type: 'string', value: 'PM|CCE', description: 'rail of an inline destination' },
  'bank-code': {
    type: 'string',
    value: 'NNNN',
    description: '4-digit bank code (CCE: the first 4 digits of the account)',
  },
  'doc-type': { type: 'string', value: 'V|E|J|P|G', description: 'document type of the beneficiary' },
  'doc-number': { type: 'string', value: 'DIGITS', description: 'document number, digits only' },
  'beneficiary-name': { type: 'string', value: 'NAME', description: 'CCE only: name for the interbank message (≤ 35)' },
};

export const CLIENT_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'version',
    group: 'client',
    summary: 'discovery: release, environment, rails (unsigned, no key needed)',
    connection: 'public',
    load: client('version'),
  },
  {
    name: 'me',
    group: 'client',
    summary: 'identity of the key: fingerprint, limits, webhook',
    connection: 'client',
    load: client('me'),
  },
  { name: 'balance', group: 'client', summary: 'available balance', connection: 'client', load: client('balance') },
  {
    name: 'rate',
    group: 'client',
    summary: 'published rate for the balance currency to VES',
    connection: 'client',
    load: client('rate'),
  },
  {
    name: 'quote',
    group: 'client',
    summary: 'freeze a price for one payment',
    connection: 'client',
    options: {
      'amount-type': { type: 'string', value: 'SOURCE|TARGET', description: 'which side you fix' },
      'amount-minor': { type: 'string', value: 'N', description: 'the fixed amount, minor units' },
      ...IDEMPOTENCY,
    },
    load: client('quote'),
  },
  {
    name: 'pay',
    group: 'client',
    summary: 'issue a payment (the only command that moves money)',
    connection: 'client',
    options: {
      'amount-minor': { type: 'string', value: 'N', description: 'amount in minor units (150000 = 1500.00 VES)' },
      currency: { type: 'string', value: 'CUR', description: 'payment currency (default VES)' },
      'beneficiary-id': { type: 'string', value: 'B', description: 'pay a stored beneficiary' },
      beneficiary: { type: 'string', value: 'DEST', description: 'inline destination: PM phone or CCE account' },
      ...DESTINATION,
      'quote-id': { type: 'string', value: 'Q', description: 'a live quote of yours (non-VES balances)' },
      ...IDEMPOTENCY,
    },
    details:
      'Either --beneficiary-id B, or an inline destination (--rail --beneficiary --bank-code --doc-type --doc-number\n' +
      '[--beneficiary-name]). A payment answered as unknown must never be paid again: follow it with\n' +
      '`dispersa payments get <id> --wait`. After a failure with no answer (exit 3), rerun with the same\n' +
      '--idempotency-key: the service returns the original payment instead of making a second one.',
    load: client('pay'),
  },
  {
    name: 'payments get',
    group: 'client',
    summary: 'read one payment (--wait polls until it is final)',
    connection: 'client',
    args: ['id'],
    options: {
      wait: { type: 'boolean', description: 'poll until completed or failed, or until the timeout' },
      'timeout-seconds': { type: 'string', value: 'N', description: 'with --wait: give up after N s (60)' },
      'interval-ms': { type: 'string', value: 'N', description: 'with --wait: pause between reads (1000)' },
    },
    load: client('paymentsGet'),
  },
  {
    name: 'payments list',
    group: 'client',
    summary: 'list payments, newest first',
    connection: 'client',
    options: {
      status: { type: 'string', value: 'STATE', description: 'only payments in this state' },
      ...LISTING_OPTIONS,
    },
    load: client('paymentsList'),
  },
  {
    name: 'beneficiaries create',
    group: 'client',
    summary: 'store a destination (immutable) under an alias',
    connection: 'client',
    options: {
      account: { type: 'string', value: 'DEST', description: 'PM: 11-digit phone; CCE: 20-digit account' },
      ...DESTINATION,
      alias: { type: 'string', value: 'TEXT', description: 'your label (the only editable field)' },
    },
    load: client('beneficiariesCreate'),
  },
  {
    name: 'beneficiaries list',
    group: 'client',
    summary: 'list beneficiaries, newest first',
    connection: 'client',
    options: { ...LISTING_OPTIONS },
    load: client('beneficiariesList'),
  },
  {
    name: 'beneficiaries get',
    group: 'client',
    summary: 'read one beneficiary',
    connection: 'client',
    args: ['id'],
    load: client('beneficiariesGet'),
  },
  {
    name: 'beneficiaries update',
    group: 'client',
    summary: 'change the alias',
    connection: 'client',
    args: ['id'],
    options: { alias: { type: 'string', value: 'TEXT', description: 'new alias' } },
    load: client('beneficiariesUpdate'),
  },
  {
    name: 'beneficiaries archive',
    group: 'client',
    summary: 'archive (INACTIVE; no new payments may use it)',
    connection: 'client',
    args: ['id'],
    load: client('beneficiariesArchive'),
  },
  {
    name: 'webhook get',
    group: 'client',
    summary: 'read the webhook configuration',
    connection: 'client',
    load: client('webhookGet'),
  },
  {
    name: 'webhook set',
    group: 'client',
    summary: 'register a webhook URL (proved by a signed challenge)',
    connection: 'client',
    args: ['url'],
    load: client('webhookSet'),
  },
  {
    name: 'webhook test',
    group: 'client',
    summary: 'send a test event to the registered URL',
    connection: 'client',
    load: client('webhookTest'),
  },
  {
    name: 'webhook keys',
    group: 'client',
    summary: 'the key set (JWKS) that verifies events',
    connection: 'public',
    load: client('webhookKeys'),
  },
  {
    name: 'listen',
    group: 'client',
    summary: 'local webhook receiver: verify each event and print it as a JSON line',
    connection: 'public',
    options: {
      port: { type: 'string', value: 'P', description: 'port to listen on (0: any free port)' },
      host: { type: 'string', value: 'H', description: 'address to bind (127.0.0.1)' },
      'jwks-url': { type: 'string', value: 'URL', description: 'key set (default <base URL>/v2/webhook/keys)' },
      'tolerance-sec': { type: 'string', value: 'N', description: 'accepted clock distance of a signature (300)' },
    },
    details:
      'Registers nothing by itself: point the service at it with `dispersa webhook set http://127.0.0.1:P/`\n' +
      '(the service must allow http:// targets: DISPERSA_WEBHOOK_ALLOW_INSECURE=true, development only).',
    load: async () => (await import('./commands/listen.ts')).listen,
  },
];
