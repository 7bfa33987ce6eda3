import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
});

describe('public discovery routes', () => {
  it('GET /health', async () => {
    const res = await fetch(`${server.baseUrl}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /v2/version has every field of the spec', async () => {
    const res = await fetch(`${server.baseUrl}/v2/version`);
    const body: any = await res.json();
    expect(res.status).toBe(200);
    expect(body.status).toBe('success');
    expect(body.payload).toEqual({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      apiVersion: 'v2',
      environment: 'sandbox',
      rails: ['PM', 'CCE'],
      simulado: true,
      links: { openapi: '/v2/openapi.json', jwks: '/v2/webhook/keys' },
    });
  });

  it('rails follow DISPERSA_RAILS', async () => {
    const s = await startTestServer({ env: { DISPERSA_RAILS: 'PM' } });
    try {
      const body: any = await (await fetch(`${s.baseUrl}/v2/version`)).json();
      expect(body.payload.rails).toEqual(['PM']);
    } finally {
      await s.stop();
    }
  });

  it('an unknown route is 404 with the error body only', async () => {
    const res = await fetch(`${server.baseUrl}/v2/nothing-here`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not found' });
    // The error body is { error } alone; support's trace id travels in a header.
    expect(res.headers.get('x-trace-id')).toMatch(/^tr_/);
  });

  it('the OpenAPI document declares every route, its authentication and its required headers', async () => {
    const doc: any = await (await fetch(`${server.baseUrl}/v2/openapi.json`)).json();
    expect(doc.openapi).toMatch(/^3\./);
    // The three signed headers are security schemes, required together on every signed route.
    const schemes = doc.components.securitySchemes;
    expect(
      Object.values(schemes)
        .map((s: any) => `${s.type}:${s.in}:${s.name}`)
        .sort(),
    ).toEqual(['apiKey:header:x-api-key', 'apiKey:header:x-nonce', 'apiKey:header:x-signature']);
    expect(schemes.Signature.description).toContain('NUL');
    const expected: [string, string][] = [
      ['get', '/v2/me'],
      ['get', '/v2/rate'],
      ['post', '/v2/quotes'],
      ['post', '/v2/payments'],
      ['get', '/v2/payments/{id}'],
      ['get', '/v2/payments'],
      ['get', '/v2/balance'],
      ['post', '/v2/beneficiaries'],
      ['get', '/v2/beneficiaries'],
      ['get', '/v2/beneficiaries/{id}'],
      ['patch', '/v2/beneficiaries/{id}'],
      ['delete', '/v2/beneficiaries/{id}'],
      ['get', '/v2/webhook'],
      ['put', '/v2/webhook'],
      ['post', '/v2/webhook/test'],
    ];
    for (const [method, route] of expected) {
      const op = doc.paths[route]?.[method];
      expect(op, `${method} ${route}`).toBeDefined();
      expect(op.security, `${method} ${route} security`).toEqual([{ ApiKey: [], Nonce: [], Signature: [] }]);
      const headers = new Map<string, boolean>(
        (op.parameters ?? [])
          .filter((p: { in: string }) => p.in === 'header')
          .map((p: { name: string; required?: boolean }) => [p.name, p.required === true]),
      );
      for (const h of ['x-api-key', 'x-nonce', 'x-signature', 'content-type']) expect(headers.has(h)).toBe(false);
      const idem = method === 'post' && (route === '/v2/payments' || route === '/v2/quotes');
      expect(headers.get('idempotency-key') ?? false, `${method} ${route} idempotency-key`).toBe(idem);
      const hasBody = ['post', 'put', 'patch'].includes(method) && route !== '/v2/webhook/test';
      expect(op.requestBody?.required ?? false, `${method} ${route} body`).toBe(hasBody);
      if (hasBody) expect(Object.keys(op.requestBody.content)).toEqual(['application/json']);
      for (const code of ['400', '401', '415', '500']) {
        expect(op.responses[code]?.content['application/json'].schema, `${method} ${route} ${code}`).toEqual({
          $ref: '#/components/schemas/Error',
        });
      }
    }
    for (const route of ['/v2/version', '/health', '/v2/webhook/keys', '/v2/openapi.json']) {
      expect(doc.paths[route]?.get?.security, route).toEqual([]);
    }
  });
});

describe('interoperable envelope', () => {
  it('accepts a request signed and sent by the openssl and curl command-line tools', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dispersa-openssl-'));
    // The key pair and the script's files are the test's own: gone with it, private key included.
    try {
      execFileSync(
        'openssl',
        ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', path.join(dir, 'key.pem')],
        {
          stdio: 'ignore',
        },
      );
      execFileSync('openssl', ['pkey', '-in', path.join(dir, 'key.pem'), '-pubout', '-out', path.join(dir, 'pub.pem')]);
      const c = await server.admin('POST', '/admin/v1/clients', { name: 'openssl', currency: 'VES' });
      const k = await server.admin('POST', `/admin/v1/clients/${c.body.payload.clientId}/keys`, {
        publicKeyPem: readFileSync(path.join(dir, 'pub.pem'), 'utf8'),
      });
      expect(k.status).toBe(201);
      const script = path.join(dir, 'call.sh');
      writeFileSync(
        script,
        [
          'set -euo pipefail',
          'cd "$1"',
          'NONCE=$(date +%s%N)',
          // The six pieces joined by NUL bytes, built by printf, never by Node.
          `printf 'GET\\0/v2/me?x=1\\0%s\\0\\0\\0%s' "$2" "$NONCE" > envelope.bin`,
          'openssl dgst -sha256 -sign key.pem -out sig.bin envelope.bin',
          'SIG=$(openssl base64 -A -in sig.bin)',
          'curl -s -o body.json -w "%{http_code}" -H "x-api-key: $2" -H "x-nonce: $NONCE" -H "x-signature: $SIG" "$3/v2/me?x=1"',
        ].join('\n'),
      );
      // Asynchronously: the server answering curl lives in this very process.
      const { stdout: status } = await promisify(execFile)('bash', [
        script,
        dir,
        k.body.payload.apiKey,
        server.baseUrl,
      ]);
      expect(status).toBe('200');
      const body = JSON.parse(readFileSync(path.join(dir, 'body.json'), 'utf8'));
      expect(body.payload.publicKeyFingerprint).toBe(k.body.payload.publicKeyFingerprint);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
