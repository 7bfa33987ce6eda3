import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Jwk, signWebhookForTest } from '@dispersa/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../support/keys.ts';
import { startTestServer, type TestServer } from '../support/test-server.ts';
import { type CliClient, cliClient, PM_DESTINATION } from './cli-fixture.ts';
import { makeHome, type RunningCli, runCli, startCli } from './cli-process.ts';

let home: { home: string; remove(): Promise<void> };
beforeAll(async () => {
  home = await makeHome();
});
afterAll(async () => {
  await home?.remove();
});

async function listenerUrl(cli: RunningCli): Promise<string> {
  const line = await cli.waitFor('stderr', /listening on (http:\/\/\S+\/)/);
  return /listening on (http:\/\/\S+\/)/.exec(line)![1]!;
}

function jwkOf(index: number, kid: string): Jwk {
  return { ...(testKeyPair(index).publicKey.export({ format: 'jwk' }) as Jwk), kid, use: 'sig', alg: 'RS256' };
}

function event(type: string, data: unknown, id = `evt_${Math.random().toString(36).slice(2)}`) {
  return JSON.stringify({ id, type, test: false, createdAt: new Date().toISOString(), data });
}

async function deliver(url: string, body: string, signature?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['x-dispersa-signature'] = signature;
  const res = await fetch(url, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as any };
}

describe('dispersa listen against a key set of our own', () => {
  let jwksServer: Server;
  let jwksUrl: string;
  let keys: Jwk[] = [jwkOf(0, 'k1')];
  let cli: RunningCli;
  let url: string;

  beforeAll(async () => {
    jwksServer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/keys`;
    cli = startCli(['listen', '--port', '0', '--jwks-url', jwksUrl], { env: { HOME: home.home } });
    url = await listenerUrl(cli);
  });

  afterAll(async () => {
    await cli?.stop();
    await new Promise((resolve) => jwksServer?.close(resolve));
  });

  it('prints a verified event as one JSON line and acknowledges it', async () => {
    const body = event('payment.state_changed', {
      payment: { intentId: 'pay_1', id: 'pay_1', state: 'completed', extra: 'kept' },
      previousState: 'processing',
    });
    const answer = await deliver(url, body, signWebhookForTest(body, testKeyPair(0).privateKey, 'k1'));
    expect(answer).toEqual({ status: 200, body: { received: true } });
    const line = await cli.waitFor('stdout', /pay_1/);
    expect(JSON.parse(line)).toEqual(JSON.parse(body));
    await cli.waitFor('stderr', /verified payment\.state_changed evt_\w+ kid k1/);
  });

  it('echoes the challenge of a webhook.verification event', async () => {
    const body = event('webhook.verification', { challenge: 'abc-123' });
    const answer = await deliver(url, body, signWebhookForTest(body, testKeyPair(0).privateKey, 'k1'));
    expect(answer).toEqual({ status: 200, body: { challenge: 'abc-123' } });
    await cli.waitFor('stdout', /abc-123/);
  });

  it('refuses a changed body, a missing header, a foreign key and an old signature with 400', async () => {
    const printedBefore = cli.stdoutLines.length;
    const body = event('payment.state_changed', { payment: { state: 'completed' }, previousState: null });
    const signature = signWebhookForTest(body, testKeyPair(0).privateKey, 'k1');
    const tampered = await deliver(url, body.replace('completed', 'failed'), signature);
    expect(tampered.status).toBe(400);
    expect(tampered.body.error).toMatch(/^bad_signature/);
    await cli.waitFor('stderr', /refused delivery: bad_signature/);

    expect((await deliver(url, body)).status).toBe(400);
    const foreign = signWebhookForTest(body, testKeyPair(1).privateKey, 'k1');
    expect((await deliver(url, body, foreign)).status).toBe(400);
    const old = signWebhookForTest(body, testKeyPair(0).privateKey, 'k1', Math.floor(Date.now() / 1000) - 3600);
    expect((await deliver(url, body, old)).body.error).toMatch(/^timestamp_outside_tolerance/);
    expect((await fetch(url)).status).toBe(405);
    expect(cli.stdoutLines.length).toBe(printedBefore);
  });

  it('refetches the key set when an event names a kid it has not seen (rotation)', async () => {
    keys = [jwkOf(0, 'k1'), jwkOf(1, 'k2')];
    const body = event('payment.state_changed', { payment: { state: 'failed' }, previousState: 'unknown' }, 'evt_rot');
    const answer = await deliver(url, body, signWebhookForTest(body, testKeyPair(1).privateKey, 'k2'));
    expect(answer.status).toBe(200);
    await cli.waitFor('stdout', /evt_rot/);
  });

  it('stops cleanly on SIGTERM', async () => {
    const other = startCli(['listen', '--port', '0', '--jwks-url', jwksUrl], { env: { HOME: home.home } });
    await listenerUrl(other);
    expect(await other.stop()).toBe(0);
  });
});

describe('dispersa listen with the real service', () => {
  let server: TestServer;
  let client: CliClient;
  let cli: RunningCli;
  let url: string;

  beforeAll(async () => {
    server = await startTestServer({ env: { DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true' } });
    client = await cliClient(server, home.home, { fundMinor: 10_000_000n });
    cli = startCli(['listen', '--port', '0'], { env: client.env });
    url = await listenerUrl(cli);
  });

  afterAll(async () => {
    await cli?.stop();
    await server?.stop();
  });

  it('webhook set proves control through the listener, test and real events arrive verified', async () => {
    const set = await runCli(['webhook', 'set', url], { env: client.env });
    expect(set.code).toBe(0);
    expect(set.json()).toMatchObject({ webhookUrl: url, changed: true });
    await cli.waitFor('stdout', /"type":"webhook\.verification"/);
    expect((await runCli(['webhook', 'get'], { env: client.env })).json()).toMatchObject({ webhookUrl: url });

    const test = await runCli(['webhook', 'test'], { env: client.env });
    expect(test.json()).toEqual({ webhookUrl: url, sent: true });
    const testEvent = JSON.parse(await cli.waitFor('stdout', /"test":true/));
    expect(testEvent).toMatchObject({ type: 'payment.state_changed', test: true });

    const paid = (await runCli(['pay', '--amount-minor', '150000', ...PM_DESTINATION], { env: client.env })).json();
    const real = JSON.parse(await cli.waitFor('stdout', new RegExp(paid.intentId), 20_000));
    expect(real).toMatchObject({
      type: 'payment.state_changed',
      test: false,
      data: { payment: { state: 'completed' } },
    });

    const keys = await runCli(['webhook', 'keys'], { env: { HOME: home.home, DISPERSA_BASE_URL: server.baseUrl } });
    expect(keys.json().keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
  });
});
