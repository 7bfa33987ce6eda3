import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_IDS } from '../../src/http/openapi.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';

/**
 * GET /v2/openapi.json as tools take it: `redocly lint` with its recommended rules finds no error, and what the
 * issue found missing is there (operation ids, security schemes, servers, typed queries, webhooks, no errorMessage).
 */

const run = promisify(execFile);
const redocly = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')),
  'bin/cli.js',
);

let server: TestServer;
let dir: string;
let doc: any;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(path.join(tmpdir(), 'dispersa-openapi-'));
  doc = await (await fetch(`${server.baseUrl}/v2/openapi.json`)).json();
});
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([route, item]: [string, any]) =>
    Object.entries(item).map(([method, op]: [string, any]) => ({ key: `${method.toUpperCase()} ${route}`, op })),
  );

describe('the OpenAPI document', () => {
  it('passes redocly lint with the recommended rules: no error', async () => {
    const file = path.join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(doc));
    const result = await run(process.execPath, [redocly, 'lint', file, '--extends=recommended', '--format=json'], {
      timeout: 120_000,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((err) => err);
    const report = JSON.parse(result.stdout);
    const errors = report.problems.filter((p: any) => p.severity === 'error');
    expect(errors.map((p: any) => `${p.ruleId} ${p.location?.[0]?.pointer}: ${p.message}`)).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // The remaining warnings: public routes (health, version, key set, this document) have no 4xx to declare.
    expect(report.problems.every((p: any) => p.ruleId === 'operation-4xx-response')).toBe(true);
  }, 150_000);

  it('lists every public route of the spec, each with its operationId', () => {
    const keys = operations().map((o) => o.key);
    expect(keys.sort()).toEqual(Object.keys(OPERATION_IDS).sort());
    for (const { key, op } of operations()) expect(op.operationId, key).toBe(OPERATION_IDS[key]);
    expect(new Set(Object.values(OPERATION_IDS)).size).toBe(Object.keys(OPERATION_IDS).length);
  });

  it('has servers, typed query parameters, and not the validator keyword errorMessage', () => {
    expect(doc.servers[0].url).toMatch(/^http/);
    const limit = doc.paths['/v2/payments'].get.parameters.find((p: any) => p.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', schema: { type: 'integer', minimum: 1 } });
    const beneficiaries = doc.paths['/v2/beneficiaries'].get.parameters.find((p: any) => p.name === 'limit');
    expect(beneficiaries.schema.type).toBe('integer');
    const status = doc.paths['/v2/payments'].get.parameters.find((p: any) => p.name === 'status');
    expect(status.schema.enum).toEqual(['pending', 'processing', 'completed', 'failed', 'unknown']);
    for (const keyword of ['errorMessage', 'errorText', 'startsWithField']) {
      expect(JSON.stringify(doc)).not.toContain(`"${keyword}"`);
    }
  });

  it('states the exact rules of the payment body and of the Payment', () => {
    const body = doc.paths['/v2/payments'].post.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['amountMinor', 'currency']);
    expect(body.properties.rail.enum).toEqual(['PM', 'CCE']);
    expect(body.properties.docType.enum).toEqual(['V', 'E', 'J', 'P', 'G']);
    expect(body.properties.amountMinor).toMatchObject({ type: 'string', pattern: '^[1-9][0-9]*$' });
    expect(body.properties.bankCode.pattern).toBe('^[0-9]{4}$');
    expect(body.properties.docNumber.pattern).toBe('^[0-9]{1,15}$');
    expect(body.properties.currency.enum).toEqual(['VES']);
    const payment =
      doc.paths['/v2/payments/{id}'].get.responses['200'].content['application/json'].schema.properties.payload
        .properties;
    expect(payment.state.enum).toEqual(['pending', 'processing', 'completed', 'failed', 'unknown']);
    expect(payment.subStatus.enum).toContain('under_review');
    expect(payment.rail.enum).toEqual(['PM', 'CCE']);
    expect(payment.amountMinor.pattern).toBe('^[0-9]+$');
  });

  it('declares 415 on every route with a body, and the error body on every error status', () => {
    for (const { key, op } of operations()) {
      if (op.requestBody) expect(op.responses['415'], key).toBeDefined();
      for (const [code, response] of Object.entries(op.responses) as [string, any][]) {
        if (/^[45]/.test(code)) {
          expect(response.content['application/json'].schema, `${key} ${code}`).toEqual({
            $ref: '#/components/schemas/Error',
          });
        }
      }
    }
  });

  it('has a webhooks section with the payment state change and the test event, signed by header', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'paymentStateChanged',
      'webhookTestEvent',
      'webhookVerification',
    ]);
    const change = doc.webhooks.paymentStateChanged.post;
    const body = change.requestBody.content['application/json'].schema;
    expect(body.properties.type.const).toBe('payment.state_changed');
    expect(body.properties.test.const).toBe(false);
    expect(body.properties.data.properties.payment.properties.state).toBeDefined();
    expect(
      doc.webhooks.webhookTestEvent.post.requestBody.content['application/json'].schema.properties.test.const,
    ).toBe(true);
    expect(change.parameters.map((p: any) => p.name)).toContain('x-dispersa-signature');
  });
});
