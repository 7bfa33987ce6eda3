import { createPrivateKey } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEnvelope } from '../../src/auth/envelope.ts';
import { signEnvelope } from '../support/signed-client.ts';
import { type ServiceProcess, startService } from './service-process.ts';

/**
 * Start and stop as an operator sees them, in real child processes: a progress line for each slow step, JSON only
 * on stdout (the banner with the demo keys on stderr), one clear line and exit status 2 for a bad setting or a port
 * in use, and on SIGTERM: no new connections, the request in flight answered with `connection: close`, the workers
 * stopped, the database closed, one final line, exit 0, all within 10 s.
 */

let dir: string;
let dataDir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'dispersa-start-stop-'));
  dataDir = path.join(dir, 'data');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const baseEnv = () => ({
  DISPERSA_DATA_DIR: dataDir,
  DISPERSA_PORT: '0',
  DISPERSA_ADMIN_PORT: '0',
  DISPERSA_LOG_LEVEL: 'info',
});

async function started(service: ServiceProcess): Promise<{ baseUrl: string; adminUrl: string }> {
  const line = await service.waitFor('stdout', /"dispersa started"/);
  const { baseUrl, adminUrl } = JSON.parse(line) as { baseUrl: string; adminUrl: string };
  return { baseUrl, adminUrl };
}

const messages = (service: ServiceProcess) => service.logs().map((l) => String(l['msg']));

describe('start', () => {
  it('a first start: a progress line for each slow step, only JSON on stdout, the banner on stderr', async () => {
    const service = startService(baseEnv());
    try {
      await started(service);
      await service.waitFor('stderr', /Make a signed call/);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect(await service.exited).toBe(0);
    const said = messages(service);
    const steps = [
      /^opening the embedded database/,
      /^applying pending migrations$/,
      /^database ready$/,
      /^seeding the sandbox/,
      /^sandbox seeded$/,
      /^dispersa started$/,
    ];
    const at = steps.map((step) => said.findIndex((m) => step.test(m)));
    expect(
      at.every((i) => i >= 0),
      said.join('\n'),
    ).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(service.logs().find((l) => l['msg'] === 'database ready')).toMatchObject({ applied: expect.any(Number) });
    const stdout = service.stdout.join('\n');
    expect(stdout).not.toMatch(/sk_test_/);
    expect(stdout).not.toMatch(/sandbox is ready/);
    expect(service.stderr.join('\n')).toMatch(/api key\s+sk_test_/);
  });

  it('a bad setting: one line naming the variable, exit status 2', async () => {
    const service = startService({ ...baseEnv(), DISPERSA_PORT: 'eighty' });
    expect(await service.exited).toBe(2);
    expect(service.stderr.filter((l) => l !== '')).toEqual([
      'dispersa: configuration error: DISPERSA_PORT: must be an integer, got "eighty"',
    ]);
    expect(service.stdout).toEqual([]);
  });

  for (const [variable, names] of [
    ['DISPERSA_PORT', 'DISPERSA_HOST, DISPERSA_PORT'],
    ['DISPERSA_ADMIN_PORT', 'DISPERSA_ADMIN_HOST, DISPERSA_ADMIN_PORT'],
  ] as const) {
    it(`${variable} in use: one line naming it, exit status 2`, async () => {
      const squatter = net.createServer();
      await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
      const port = (squatter.address() as net.AddressInfo).port;
      try {
        const service = startService({ ...baseEnv(), [variable]: String(port) });
        expect(await service.exited).toBe(2);
        expect(service.stderr.filter((l) => l !== '')).toEqual([
          `dispersa: cannot listen on 127.0.0.1:${port}: address already in use (${names})`,
        ]);
        // stdout held the progress lines, as JSON.
        expect(messages(service)).toContain('database ready');
      } finally {
        squatter.close();
      }
    });
  }
});

/** A signed PUT /v2/webhook of the demo VES client, sent on the given keep-alive agent. */
async function putWebhook(baseUrl: string, agent: http.Agent, webhookUrl: string) {
  const demo = JSON.parse(await readFile(path.join(dataDir, 'demo', 'credentials.json'), 'utf8'));
  const ves = demo.clients[0] as { apiKey: string; privateKeyFile: string };
  const key = createPrivateKey(await readFile(ves.privateKeyFile, 'utf8'));
  const body = JSON.stringify({ webhookUrl });
  const nonce = String(BigInt(Date.now()) * 1000n);
  const envelope = buildEnvelope({
    method: 'PUT',
    target: '/v2/webhook',
    apiKey: ves.apiKey,
    idempotencySlot: '',
    body: Buffer.from(body),
    nonce,
  });
  return request(baseUrl, '/v2/webhook', agent, {
    method: 'PUT',
    body,
    headers: {
      'content-type': 'application/json',
      'x-api-key': ves.apiKey,
      'x-nonce': nonce,
      'x-signature': signEnvelope(envelope, key),
    },
  });
}

function request(
  baseUrl: string,
  target: string,
  agent: http.Agent,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${target}`, {
      agent,
      method: options.method ?? 'GET',
      headers: options.headers,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(true));
  });
}

describe('stop', () => {
  it('SIGTERM: no new connections, the request in flight finishes with connection: close, one last line, exit 0', async () => {
    // The webhook receiver holds its answer to the verification, so PUT /v2/webhook is in flight at SIGTERM.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let verifying!: () => void;
    const verificationArrived = new Promise<void>((resolve) => {
      verifying = resolve;
    });
    const receiver = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8').on('data', (d: string) => {
        raw += d;
      });
      req.on('end', async () => {
        const event = JSON.parse(raw);
        verifying();
        await held;
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ challenge: event.data.challenge }));
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`;

    const service = startService({ ...baseEnv(), DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const { baseUrl } = await started(service);
      // One connection, kept alive: the health check opens it, the PUT reuses it.
      const health = await request(baseUrl, '/health', agent);
      expect(health.status).toBe(200);
      expect(health.headers['connection']).toBe('keep-alive');
      const put = putWebhook(baseUrl, agent, receiverUrl);
      await verificationArrived;

      const signalledAt = Date.now();
      service.child.kill('SIGTERM');
      await service.waitFor('stdout', /"shutting down/);
      // No new connection is accepted while the request in flight is still being served.
      let refused = false;
      for (let i = 0; i < 50 && !refused; i++) {
        refused = await refusesConnections(baseUrl);
        if (!refused) await new Promise((r) => setTimeout(r, 20));
      }
      expect(refused).toBe(true);
      expect(service.child.exitCode).toBeNull();

      release();
      const answer = await put;
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).payload.changed).toBe(true);
      expect(answer.headers['connection']).toBe('close');

      expect(await service.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(10_000);
      const logs = service.logs();
      const last = logs.at(-1)!;
      expect(last).toMatchObject({ msg: 'dispersa stopped', signal: 'SIGTERM' });
      expect(Number(last['ms'])).toBeLessThan(10_000);
      // Every loop finished its current item and stopped before the database closed.
      const startedWorkers = logs.filter((l) => l['msg'] === 'worker started').map((l) => l['worker']);
      const stoppedWorkers = logs.filter((l) => l['msg'] === 'worker stopped').map((l) => l['worker']);
      expect(startedWorkers.length).toBeGreaterThan(0);
      expect([...stoppedWorkers].sort()).toEqual([...startedWorkers].sort());
    } finally {
      release();
      agent.destroy();
      receiver.close();
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
  });

  it('SIGTERM with DISPERSA_SHUTDOWN_DELAY_MS: /readyz answers 503 while the listeners still serve, then it stops', async () => {
    const service = startService({ ...baseEnv(), DISPERSA_SHUTDOWN_DELAY_MS: '1500' });
    try {
      const { baseUrl, adminUrl } = await started(service);
      expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);
      service.child.kill('SIGTERM');
      await service.waitFor('stdout', /"shutting down/);
      const ready = await fetch(`${adminUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ error: 'not ready: shutting down' });
      expect((await fetch(`${baseUrl}/readyz`)).status).toBe(503);
      expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
      expect(await service.exited).toBe(0);
      // The workers log their own stop around the same moment; what matters is that the service says it stopped.
      const messages = service.logs().map((l) => l['msg']);
      expect(messages.indexOf('dispersa stopped')).toBeGreaterThan(
        messages.findIndex((m) => /^shutting down/.test(String(m))),
      );
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
  });
});
