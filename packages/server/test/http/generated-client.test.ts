import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../support/keys.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * What an integrator does with tools nobody here wrote: generate types from GET /v2/openapi.json with
 * openapi-typescript, call through openapi-fetch with the signing done once in a middleware (node:crypto only),
 * type-check that program under nodenext strict (no auth header is passed by hand: the document models them as
 * security schemes), and run it against the service.
 */

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
// Inside the repository, so that openapi-fetch resolves from its node_modules like any installed package.
const dir = path.join(repoRoot, 'packages/server/test/.generated', `client-${process.pid}`);

const PROGRAM = `import { sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema.js';

const apiKey = process.env['DISPERSA_API_KEY'] ?? '';
const privateKey = readFileSync(process.env['DISPERSA_PRIVATE_KEY_FILE'] ?? '', 'utf8');
let lastNonce = BigInt(Date.now()) * 1_000_000n;

// Signs every request once, here: the generated operations carry no auth parameters.
const signer: Middleware = {
  async onRequest({ request }) {
    const url = new URL(request.url);
    const body = Buffer.from(await request.clone().arrayBuffer());
    lastNonce += 1n;
    const nonce = lastNonce.toString();
    const keyed = request.method === 'POST' && (url.pathname === '/v2/payments' || url.pathname === '/v2/quotes');
    const envelope = Buffer.concat([
      Buffer.from([request.method, url.pathname + url.search, apiKey, keyed ? request.headers.get('idempotency-key') ?? '' : ''].join('\\0') + '\\0'),
      body,
      Buffer.from('\\0' + nonce),
    ]);
    request.headers.set('x-api-key', apiKey);
    request.headers.set('x-nonce', nonce);
    request.headers.set('x-signature', sign('sha256', envelope, privateKey).toString('base64'));
    return request;
  },
};

const dispersa = createClient<paths>({ baseUrl: process.env['DISPERSA_BASE_URL'] ?? '' });
dispersa.use(signer);

const me = await dispersa.GET('/v2/me');
const created = await dispersa.POST('/v2/payments', {
  params: { header: { 'idempotency-key': 'generated-1' } },
  body: {
    amountMinor: '150000',
    currency: 'VES',
    rail: 'PM',
    beneficiary: '04141234567',
    bankCode: '0102',
    docType: 'V',
    docNumber: '12345678',
  },
});
const state: string | undefined = created.data?.payload.state;
const page = await dispersa.GET('/v2/payments', { params: { query: { limit: 5 } } });
const missing = await dispersa.GET('/v2/payments/{id}', { params: { path: { id: 'pay_missing' } } });
const notFound: string | undefined = missing.error?.error;

// @ts-expect-error limit is typed as an integer
await dispersa.GET('/v2/payments', { params: { query: { limit: 'five' } } }).catch(() => undefined);
// @ts-expect-error payments.create needs its idempotency-key
void (() => dispersa.POST('/v2/payments', { body: { amountMinor: '1', currency: 'VES' } }));

console.log(JSON.stringify({
  me: me.response.status,
  fingerprint: me.data?.payload.publicKeyFingerprint?.slice(0, 7),
  created: created.response.status,
  state,
  listed: page.data?.payload.data.length,
  notFound: [missing.response.status, notFound],
}));
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  },
  files: ['program.ts', 'schema.d.ts'],
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('a client generated from /v2/openapi.json', () => {
  it('openapi-typescript + openapi-fetch: a signed call type-checks with no auth header by hand, and works', async () => {
    const doc = (await (await fetch(`${server.baseUrl}/v2/openapi.json`)).json()) as OpenAPI3;
    const schema = astToString(await openapiTS(doc));
    expect(schema).toContain('"/v2/payments"');
    await writeFile(path.join(dir, 'schema.d.ts'), schema);
    await writeFile(path.join(dir, 'program.ts'), PROGRAM);
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, timeout: 120_000 }).catch((err) => {
      throw new Error(`the generated client does not type-check:\n${err.stdout}${err.stderr}`);
    });

    const client = await server.newClient({ fundMinor: 10_000_000n });
    const keyFile = path.join(dir, 'key.pem');
    await writeFile(keyFile, testKeyPair(0).privatePem, { mode: 0o600 });
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'program.ts'], {
      cwd: dir,
      timeout: 60_000,
      env: {
        PATH: process.env['PATH'] ?? '',
        DISPERSA_BASE_URL: server.baseUrl,
        DISPERSA_API_KEY: client.apiKey,
        DISPERSA_PRIVATE_KEY_FILE: keyFile,
      },
    });
    expect(JSON.parse(stdout)).toEqual({
      me: 200,
      fingerprint: 'SHA256:',
      created: 201,
      state: 'completed',
      listed: 1,
      notFound: [404, 'payment not found'],
    });
  }, 180_000);
});
