import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pmBody } from '../beneficiaries/helpers.ts';
import { newKey, PM, pay, waitForPayment } from '../support/payments.ts';
import type { Answer } from '../support/signed-client.ts';
import { ADMIN_TOKEN, startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * Issue 13: malformed and adversarial requests across every route of both listeners, over real HTTP, signed where
 * the route needs it. Every answer is below 500, every non-2xx is `{ error }` and nothing else (no body on HEAD),
 * every request meant to change something is refused, and afterwards nothing changed: balances, listings, the rows
 * of every table a request could write, and, for requests that fail authentication, the nonce marks.
 *
 * Bounded: a fixed seed per run is printed by fast-check on failure; about 2,500 requests in all.
 */

let server: TestServer;
let alice: TestClient;
let bob: TestClient;
const ids = { payment: '', otherPayment: '', beneficiary: '', otherBeneficiary: '', kid: '', eventId: '' };

beforeAll(async () => {
  server = await startTestServer();
  alice = await server.newClient({ fundMinor: 50_000_000n });
  bob = await server.newClient({ fundMinor: 50_000_000n, keyIndex: 1 });
  const p = await pay(alice, '150000', PM, newKey('fuzz'));
  ids.payment = p.body.payload.id;
  await waitForPayment(alice, ids.payment, (x) => x.state === 'completed');
  ids.otherPayment = (await pay(bob, '150000', PM, newKey('fuzz'))).body.payload.id;
  ids.beneficiary = (await alice.api.post('/v2/beneficiaries', pmBody())).body.payload.id;
  ids.otherBeneficiary = (await bob.api.post('/v2/beneficiaries', pmBody())).body.payload.id;
  ids.kid = (await server.admin('GET', '/admin/v1/webhooks/keys')).body.payload.data?.[0]?.kid ?? 'kid';
}, 120_000);
afterAll(async () => server?.stop());

// ---------------------------------------------------------------------------------------------------------------
// Values

/** Strings no field accepts: every one must be refused wherever it goes. */
const poison = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '04141234567\u0000', '\u001b[2J', '\u007f', 'x\u0008y', '\u000b'),
  fc.constantFrom('\ud800', 'a\udfffb', '\udbff'),
  // Tab, line feed and carriage return are left out: a statement file and a note may hold them.
  fc
    .tuple(
      fc.string({ maxLength: 8 }),
      fc.integer({ min: 0, max: 31 }).filter((c) => c !== 9 && c !== 10 && c !== 13),
      fc.string({ maxLength: 8 }),
    )
    .map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
);

/** Hostile but printable: injection, traversal, format strings, odd Unicode, numbers in strange forms. */
const hostile = fc.oneof(
  fc.constantFrom(
    "'; DROP TABLE payments; --",
    '" OR 1=1 --',
    '../../../../etc/passwd',
    '%00',
    '%ZZ',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup string is the point
    '${jndi:ldap://x/a}',
    '{{7*7}}',
    '<script>alert(1)</script>',
    '\u202egnp.exe',
    '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀',
    'ñandú',
    '9'.repeat(40),
    '-1',
    '0',
    '1e309',
    '0x10',
    ' 150000 ',
    'NaN',
    'null',
    '',
    ' ',
    'VES',
    'PM',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ minLength: 200, maxLength: 3000 }),
);

const anyJson = fc.oneof(
  hostile,
  fc.constantFrom(null, true, false, 0, -1, 1e308, -0, 2 ** 64, Number.MAX_SAFE_INTEGER + 2),
  fc.array(hostile, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 10 }), hostile, { maxKeys: 3 }),
);

/** A body meant to change something, broken for sure: one field poisoned, or not a JSON object at all. */
function brokenBody(template: Record<string, unknown>) {
  const fields = Object.keys(template);
  const extra = fc.dictionary(fc.string({ maxLength: 12 }), anyJson, { maxKeys: 3 });
  const mutated = fc
    .tuple(
      fc.constantFrom(...fields, '__new__'),
      poison,
      extra,
      fc.dictionary(fc.constantFrom(...fields), anyJson),
      fc.boolean(),
    )
    .map(([field, bad, more, others, nested]) => {
      const body: Record<string, unknown> = { ...template, ...others, ...more };
      // The poison last, so nothing overwrites it: in a field, nested in an array, or in a key.
      if (field === '__new__') body[`k${bad}`] = 'v';
      else body[field] = nested ? [{ value: bad }] : bad;
      return JSON.stringify(body);
    });
  const notObject = fc.oneof(
    fc.constantFrom(
      '',
      'null',
      '[]',
      '"text"',
      '42',
      'true',
      '{',
      '{"a":',
      '{"a":1,}',
      "{'a':1}",
      '\u0000',
      '{"a":"\\u0000"}',
    ),
    fc.integer({ min: 40, max: 2000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
    fc.integer({ min: 40, max: 200 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  );
  return fc.oneof({ weight: 4, arbitrary: mutated }, { weight: 1, arbitrary: notObject });
}

/** Percent-encodes every byte outside the unreserved set (a lone surrogate becomes U+FFFD's bytes). */
function encode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.~-]/.test(c) ? c : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return out;
}

/** Path ids: real ones of the caller or of someone else, and ids that cannot exist. */
function pathId(real: string[]) {
  return fc.oneof(
    fc.constantFrom(...real),
    poison.map(encode),
    hostile.map(encode),
    fc.constantFrom(
      '%ZZ',
      '%',
      '%u0000',
      '%C0%80',
      '%ff%fe',
      '..%2F..%2F',
      'a%2Fb',
      `${'9'.repeat(120)}`,
      'x'.repeat(5000),
    ),
  );
}

const queryString = fc
  .array(
    fc.tuple(
      fc.constantFrom('limit', 'cursor', 'status', 'state', 'subStatus', 'clientId', 'base', 'kind', 'x', 'limit'),
      fc.oneof(poison, hostile, fc.constantFrom('0', '1', '100', '101', '-5', '000', '9999999999999999999999', 'abc')),
    ),
    { maxLength: 3 },
  )
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${encode(v)}`).join('&')}`));

const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/vnd.api+json',
);

// ---------------------------------------------------------------------------------------------------------------
// Routes

interface Req {
  method: string;
  target: string;
  body?: string;
  contentType?: string;
  /** The request is meant to change state: it must be refused. */
  mutation: boolean;
}

const read = (method: string) => fc.constantFrom(method, 'HEAD');

function publicRequests(): fc.Arbitrary<Req> {
  const payments = [ids.payment, ids.otherPayment];
  const beneficiaries = [ids.beneficiary, ids.otherBeneficiary];
  const paymentTemplate = { ...PM, amountMinor: '1000', currency: 'VES', beneficiaryName: 'Ana' };
  const withBody = (method: string, target: string, template: Record<string, unknown>) =>
    fc
      .tuple(brokenBody(template), contentType)
      .map(([body, ct]) => ({ method, target, body, contentType: ct, mutation: true }));
  return fc.oneof(
    fc
      .tuple(
        read('GET'),
        fc.constantFrom('/v2/me', '/v2/balance', '/v2/rate', '/v2/webhook', '/v2/payments', '/v2/beneficiaries'),
        queryString,
      )
      .map(([method, path, q]) => ({ method, target: path + q, mutation: false })),
    fc.tuple(read('GET'), pathId(payments), queryString).map(([method, id, q]) => ({
      method,
      target: `/v2/payments/${id}${q}`,
      mutation: false,
    })),
    fc
      .tuple(read('GET'), pathId(beneficiaries))
      .map(([method, id]) => ({ method, target: `/v2/beneficiaries/${id}`, mutation: false })),
    withBody('POST', '/v2/payments', paymentTemplate),
    withBody('POST', '/v2/payments', { amountMinor: '1000', currency: 'VES', beneficiaryId: ids.beneficiary }),
    withBody('POST', '/v2/quotes', { amountType: 'target', amountMinor: '150000' }),
    withBody('POST', '/v2/beneficiaries', pmBody()),
    fc.tuple(pathId(beneficiaries), brokenBody({ alias: 'renamed' }), contentType).map(([id, body, ct]) => ({
      method: 'PATCH',
      target: `/v2/beneficiaries/${id}`,
      body,
      contentType: ct,
      mutation: true,
    })),
    pathId([ids.otherBeneficiary]).map((id) => ({
      method: 'DELETE',
      target: `/v2/beneficiaries/${id}`,
      mutation: true,
    })),
    withBody('PUT', '/v2/webhook', { webhookUrl: 'https://example.com/hook' }),
    fc
      .tuple(
        fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE'),
        fc.constantFrom('/v2/nope', '/v2', '/', '/v2/payments/', '/v2//payments', '/v3/payments'),
      )
      .map(([method, target]) => ({ method, target, mutation: method !== 'GET' && method !== 'HEAD' })),
  );
}

function adminRequests(): fc.Arbitrary<Req> {
  const clients = [alice.clientId, bob.clientId];
  const withBody = (method: string, target: string, template: Record<string, unknown>) =>
    fc
      .tuple(brokenBody(template), contentType)
      .map(([body, ct]) => ({ method, target, body, contentType: ct, mutation: true }));
  const idRoute = (method: string, build: (id: string) => string, real: string[], template?: Record<string, unknown>) =>
    fc.tuple(pathId(real), template ? brokenBody(template) : fc.constant(undefined)).map(([id, body]) => ({
      method,
      target: build(id),
      body,
      contentType: 'application/json',
      // With a real id and no body to break, the request would be valid: only the broken forms are sent.
      mutation: true,
    }));
  return fc.oneof(
    fc
      .tuple(
        read('GET'),
        fc.constantFrom(
          '/admin/v1/clients',
          '/admin/v1/payments',
          '/admin/v1/quotes',
          '/admin/v1/rates',
          '/admin/v1/reconciliation/exceptions',
          '/admin/v1/reconciliation/status',
          '/admin/v1/webhooks/deliveries',
          '/admin/v1/webhooks/keys',
          '/admin/v1/sandbox/bank/lines',
          '/health',
        ),
        queryString,
      )
      .map(([method, path, q]) => ({ method, target: path + q, mutation: false })),
    fc
      .tuple(read('GET'), pathId(clients))
      .map(([method, id]) => ({ method, target: `/admin/v1/clients/${id}`, mutation: false })),
    fc
      .tuple(read('GET'), pathId(clients))
      .map(([method, id]) => ({ method, target: `/admin/v1/webhooks/clients/${id}`, mutation: false })),
    fc
      .tuple(read('GET'), pathId(['evt_aaaaaaaaaaaaaaaaaaaaaaaaaa']))
      .map(([method, id]) => ({ method, target: `/admin/v1/webhooks/events/${id}`, mutation: false })),
    fc
      .tuple(read('GET'), pathId(['rex_0000000000000001']))
      .map(([method, id]) => ({ method, target: `/admin/v1/reconciliation/exceptions/${id}`, mutation: false })),
    withBody('POST', '/admin/v1/clients', { name: 'fuzzed', currency: 'VES' }),
    idRoute('POST', (id) => `/admin/v1/clients/${id}/keys`, clients, { publicKeyPem: 'x' }),
    idRoute('POST', (id) => `/admin/v1/clients/${id}/fundings`, clients, { amountMinor: '100', reference: 'fuzz-ref' }),
    idRoute('PUT', (id) => `/admin/v1/keys/${id}/limits`, [alice.keyId], {
      limits: [{ rail: 'PM', perPaymentMaxMinor: '1', dailyMaxMinor: '1' }],
    }),
    idRoute('POST', (id) => `/admin/v1/keys/${id}/deactivate`, ['key_doesnotexist']),
    idRoute('POST', (id) => `/admin/v1/payments/${id}/resolve`, [ids.payment], { outcome: 'failed', note: 'fuzz' }),
    idRoute('POST', (id) => `/admin/v1/reconciliation/exceptions/${id}/resolve`, ['rex_0000000000000001'], {
      note: 'fuzz',
      resolvedBy: 'fuzz',
    }),
    idRoute('POST', (id) => `/admin/v1/webhooks/events/${id}/redeliver`, ['evt_doesnotexist']),
    idRoute('POST', (id) => `/admin/v1/webhooks/events/${id}/replay`, ['evt_doesnotexist'], {
      note: 'n',
      requestedBy: 'r',
    }),
    idRoute('POST', (id) => `/admin/v1/webhooks/keys/${id}/retire`, ['doesnotexist']),
    withBody('POST', '/admin/v1/rates', { base: 'USD', rate: '40.5', expiresAt: '2099-01-01T00:00:00Z' }),
    withBody('POST', '/admin/v1/reconciliation/statements', { format: 'csv', content: 'a,b\n' }),
    withBody('POST', '/admin/v1/sandbox/bank/lines', { direction: 'credit', amountMinor: '100', reference: 'fuzz' }),
    withBody('POST', '/admin/v1/sandbox/bank/suppress-debit', { paymentId: ids.payment }),
    fc
      .constantFrom(
        '/admin/v1/nope',
        '/admin',
        '/admin/v1/',
        '/console/assets/%00',
        '/console/assets/..%2f..%2fpackage.json',
      )
      .map((target) => ({ method: 'GET', target, mutation: false })),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Sending and judging

type Auth = 'valid' | 'missing' | 'bad-signature' | 'other-key-signature' | 'replayed-nonce';

async function sendPublic(req: Req, auth: Auth): Promise<Answer> {
  const base = { rawBody: req.body, contentType: req.contentType ?? null };
  const idem = req.method === 'POST' ? { idempotencyKey: newKey('fz') } : {};
  switch (auth) {
    case 'valid':
      return alice.api.request(req.method, req.target, { ...base, ...idem });
    case 'missing':
      return alice.api.request(req.method, req.target, { ...base, ...idem, omit: ['x-signature', 'x-nonce'] });
    case 'bad-signature':
      return alice.api.request(req.method, req.target, { ...base, ...idem, signature: 'AAAA' });
    case 'other-key-signature':
      // Bob's signature under Alice's API key.
      return alice.api.request(req.method, req.target, {
        ...base,
        ...idem,
        headers: { 'x-api-key': bob.apiKey },
      });
    case 'replayed-nonce':
      return alice.api.request(req.method, req.target, { ...base, ...idem, nonce: '1' });
  }
}

async function sendAdmin(req: Req, token: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (req.body !== undefined && req.contentType) headers['content-type'] = req.contentType;
  const res = await fetch(server.adminUrl + req.target, { method: req.method, headers, body: req.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {}
  return { status: res.status, body, headers: res.headers };
}

const seen = new Map<number, number>();

function judge(req: Req, res: Answer): void {
  seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
  const what = `${req.method} ${req.target.slice(0, 200)} ${String(req.body).slice(0, 200)} -> ${res.status} ${JSON.stringify(res.body)?.slice(0, 300)}`;
  expect(res.status, what).toBeLessThan(500);
  if (req.mutation) expect(res.status, `a broken change was accepted: ${what}`).toBeGreaterThanOrEqual(400);
  if (req.method === 'HEAD') {
    expect(res.body, what).toBeNull();
    return;
  }
  if (res.status >= 400) {
    expect(res.body, what).toEqual({ error: expect.any(String) });
    expect((res.body as { error: string }).error.length, what).toBeGreaterThan(0);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// State

const COUNTED = [
  'clients',
  'api_keys',
  'key_limits',
  'fundings',
  'payments',
  'holds',
  'journal_entries',
  'postings',
  'beneficiaries',
  'quotes',
  'webhook_configs',
  'webhook_change_requests',
  'webhook_replays',
  'webhook_signing_keys',
  'payment_resolutions',
  'sandbox_bank_lines',
  'sandbox_bank_suppressions',
  'recon_exceptions',
  'events',
];

async function snapshot(): Promise<Record<string, unknown>> {
  const db = server.testDb.db;
  await server.running.domains.reconciliation.reconcileOnce();
  const out: Record<string, unknown> = {};
  for (const table of COUNTED) {
    out[table] = (await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n;
  }
  out['payments.states'] = (await db.query(`SELECT id, state, sub_status FROM payments ORDER BY id`)).rows;
  // The exceptions themselves, so that one appearing says what it is about.
  out['recon_exceptions.rows'] = (
    await db.query(
      'SELECT kind, status, bank_line_ids, payment_id, amount_minor::text, details FROM recon_exceptions ORDER BY seq',
    )
  ).rows;
  out['beneficiaries.rows'] = (await db.query('SELECT id, alias, status FROM beneficiaries ORDER BY id')).rows;
  out['keys'] = (await db.query('SELECT id, active FROM api_keys ORDER BY id')).rows;
  out['limits'] = (await db.query('SELECT * FROM key_limits ORDER BY 1, 2')).rows;
  out['signing'] = (await db.query('SELECT kid, status FROM webhook_signing_keys ORDER BY kid')).rows;
  out['balances'] = [
    (await alice.api.get('/v2/balance')).body.payload,
    (await bob.api.get('/v2/balance')).body.payload,
  ];
  out['webhook'] = (await alice.api.get('/v2/webhook')).body.payload;
  return out;
}

async function nonceMarks(): Promise<unknown> {
  return (await server.testDb.db.query('SELECT id, nonce_mark::text, nonce_window::text FROM api_keys ORDER BY id'))
    .rows;
}

describe('fuzzing every route over HTTP', () => {
  it('no 5xx, { error } on every refusal, no broken change accepted, nothing changed', async () => {
    const before = await snapshot();

    await fc.assert(
      fc.asyncProperty(publicRequests(), async (req) => judge(req, await sendPublic(req, 'valid'))),
      { numRuns: 1100, seed: 13_001 },
    );
    await fc.assert(
      fc.asyncProperty(adminRequests(), async (req) => judge(req, await sendAdmin(req, ADMIN_TOKEN))),
      { numRuns: 900, seed: 13_002 },
    );

    // Requests that fail authentication leave no nonce mark behind, whatever else they carry.
    const marks = await nonceMarks();
    await fc.assert(
      fc.asyncProperty(
        publicRequests(),
        fc.constantFrom<Auth>('missing', 'bad-signature', 'other-key-signature', 'replayed-nonce'),
        async (req, auth) => {
          const res = await sendPublic(req, auth);
          judge({ ...req, mutation: true }, res);
          if (!req.target.startsWith('/v2/nope') && req.target.startsWith('/v2/') && req.method !== 'HEAD') {
            expect([400, 401, 404, 415], `${auth} ${req.method} ${req.target}`).toContain(res.status);
          }
        },
      ),
      { numRuns: 300, seed: 13_003 },
    );
    await fc.assert(
      fc.asyncProperty(
        adminRequests(),
        fc.constantFrom('', 'wrong-token-0123456789', `${ADMIN_TOKEN}x`),
        async (req, token) => {
          const res = await sendAdmin(req, token);
          judge({ ...req, mutation: true }, res);
        },
      ),
      { numRuns: 200, seed: 13_004 },
    );
    expect(await nonceMarks()).toEqual(marks);

    expect(await snapshot()).toEqual(before);
    // The run reached the routes, not only the edge: answers of many kinds came back.
    expect([...seen.keys()].filter((s) => s >= 200 && s < 300).length).toBeGreaterThan(0);
    expect(seen.get(400) ?? 0).toBeGreaterThan(200);
    expect(seen.get(404) ?? 0).toBeGreaterThan(50);
  }, 180_000);
});
