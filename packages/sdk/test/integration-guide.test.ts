import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../../server/test/support/keys.ts';
import { startTestServer, type TestServer } from '../../server/test/support/test-server.ts';
import { createDispersaClient } from '../src/client.ts';

/**
 * Runs every `ts test:<name>` code block of docs/integration.md as the reader would: a program of its own,
 * started with tsx, reading DISPERSA_BASE_URL, DISPERSA_API_KEY and DISPERSA_PRIVATE_KEY_FILE, against a real
 * service on loopback. The only change made to a sample is where '@dispersa/sdk' resolves from.
 */

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const GUIDE = path.join(REPO, 'docs', 'integration.md');
const SDK_ENTRY = pathToFileURL(path.join(REPO, 'packages', 'sdk', 'src', 'index.ts')).href;

let server: TestServer;
let work: string;
let samples: Map<string, string>;

beforeAll(async () => {
  const guide = await readFile(GUIDE, 'utf8');
  samples = new Map([...guide.matchAll(/^```ts test:([\w-]+)\n([\s\S]*?)^```$/gm)].map((m) => [m[1]!, m[2]!]));
  server = await startTestServer({ env: { DISPERSA_WEBHOOK_ALLOW_INSECURE: 'true' } });
  work = await mkdtemp(path.join(tmpdir(), 'dispersa-guide-'));
});

afterAll(async () => {
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

interface SampleClient {
  clientId: string;
  apiKey: string;
  env: Record<string, string>;
}

let clients = 0;
async function sampleClient(): Promise<SampleClient> {
  const created = await server.newClient({ fundMinor: 10_000_000n, keyIndex: 0 });
  const keyFile = path.join(work, `client-${clients++}.pem`);
  await writeFile(keyFile, testKeyPair(0).privatePem);
  return {
    clientId: created.clientId,
    apiKey: created.apiKey,
    env: { DISPERSA_BASE_URL: server.baseUrl, DISPERSA_API_KEY: created.apiKey, DISPERSA_PRIVATE_KEY_FILE: keyFile },
  };
}

async function sampleFile(name: string): Promise<string> {
  const code = samples.get(name);
  if (code === undefined) throw new Error(`docs/integration.md has no block ts test:${name}`);
  const file = path.join(work, `${name}.mts`);
  await writeFile(file, code.replaceAll("from '@dispersa/sdk'", `from '${SDK_ENTRY}'`));
  return file;
}

function spawnSample(file: string, env: Record<string, string>): ChildProcess {
  // Asynchronous on purpose: the service runs in this process and must keep answering meanwhile.
  return spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: REPO,
    env: { PATH: process.env['PATH'], ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function runSample(name: string, env: Record<string, string>) {
  const child = spawnSample(await sampleFile(name), env);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

async function paymentsOf(clientId: string): Promise<{ intentId: string; state: string }[]> {
  const answer = await server.admin('GET', `/admin/v1/payments?clientId=${clientId}&limit=100`);
  expect(answer.status).toBe(200);
  return answer.body.payload.data;
}

describe('docs/integration.md', () => {
  it('every ts block is a tested sample, and every sample below exists', async () => {
    const guide = await readFile(GUIDE, 'utf8');
    expect(guide.match(/^```ts/gm)?.length).toBe(samples.size);
    expect([...samples.keys()].sort()).toEqual(
      ['first-payout', 'first-signed-call', 'handling-unknown', 'raw-envelope', 'webhook-receiver'].sort(),
    );
  });

  it('samples compile under strict TypeScript, as a reader project would check them', async () => {
    const dir = path.join(work, 'typecheck');
    await mkdir(dir, { recursive: true });
    const files: string[] = [];
    for (const [name, code] of samples) {
      files.push(`${name}.mts`);
      await writeFile(path.join(dir, `${name}.mts`), code);
    }
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noUncheckedIndexedAccess: true,
        allowImportingTsExtensions: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [path.join(REPO, 'node_modules', '@types')],
        paths: { '@dispersa/sdk': [path.join(REPO, 'packages', 'sdk', 'src', 'index.ts')] },
      },
      files,
    };
    await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = spawn(process.execPath, [path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    tsc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    tsc.stderr!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    const code = await new Promise<number | null>((resolve) => tsc.on('close', resolve));
    expect(out).toBe('');
    expect(code).toBe(0);
  });

  it('first signed call (SDK)', async () => {
    const client = await sampleClient();
    const r = await runSample('first-signed-call', client.env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^environment sandbox rails PM,CCE$/m);
    expect(r.stdout).toMatch(/^fingerprint SHA256:\S+ limits configured true$/m);
  });

  it('first signed call by hand (raw envelope)', async () => {
    const client = await sampleClient();
    const r = await runSample('raw-envelope', client.env);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^200 SHA256:\S+$/m);
    expect(r.stdout).toMatch(/^200 hasMore false$/m);
  });

  it('first payout', async () => {
    const client = await sampleClient();
    const r = await runSample('first-payout', client.env);
    expect(r.stderr).toBe('');
    const id = /^completed (pay_\S+)$/m.exec(r.stdout)?.[1];
    expect(id, r.stdout).toBeDefined();
    expect(await paymentsOf(client.clientId)).toMatchObject([{ intentId: id, state: 'completed' }]);
  });

  it('handling unknown: watches, and never pays a second time', async () => {
    const client = await sampleClient();
    const r = await runSample('handling-unknown', { ...client.env, WATCH_MS: '3000' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^created pay_\S+ unknown reconciling$/m);
    expect(r.stdout).toMatch(/^(resolved completed|still unknown \w+ - leaving it to reconciliation)$/m);
    expect((await paymentsOf(client.clientId)).length).toBe(1);
  });

  it('webhook receiver: proves control, prints verified events, refuses forged ones', async () => {
    const client = await sampleClient();
    const child = spawnSample(await sampleFile('webhook-receiver'), { ...client.env, PORT: '0' });
    const lines: string[] = [];
    let partial = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      partial += d;
      const parts = partial.split('\n');
      partial = parts.pop()!;
      lines.push(...parts);
    });
    const waitFor = async (pattern: RegExp, timeoutMs = 15_000): Promise<string> => {
      for (const started = Date.now(); Date.now() - started < timeoutMs; ) {
        const line = lines.find((l) => pattern.test(l));
        if (line !== undefined) return line;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`no line matching ${pattern}; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`);
    };
    try {
      const url = /listening on (\S+)/.exec(await waitFor(/^listening on /))![1]!;
      const dispersa = createDispersaClient({
        baseUrl: server.baseUrl,
        apiKey: client.apiKey,
        privateKey: testKeyPair(0).privateKey,
      });
      expect(await dispersa.webhook.set(url)).toMatchObject({ webhookUrl: url, changed: true });
      await dispersa.webhook.test();
      await waitFor(/^event evt_\S+ \S+ \S+ -> \w+ \(test\)$/);
      const paid = await dispersa.payments.create({
        amountMinor: '150000',
        currency: 'VES',
        rail: 'PM',
        beneficiary: '04141234567',
        bankCode: '0102',
        docType: 'V',
        docNumber: '12345678',
      });
      await waitFor(new RegExp(`^event evt_\\S+ ${paid.intentId} \\S+ -> completed $`), 20_000);

      const forged = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-dispersa-signature': 'e30..AAAA' },
        body: '{"id":"evt_forged","type":"payment.state_changed"}',
      });
      expect(forged.status).toBe(400);
      await waitFor(/^refused \w+$/);
      expect(lines.some((l) => l.includes('evt_forged'))).toBe(false);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.on('close', resolve));
    }
  });
});
