import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKeyPair } from '../../server/test/support/keys.ts';
import { startTestServer, type TestServer } from '../../server/test/support/test-server.ts';

/**
 * The SDK as an integrator gets it: `npm pack` (which builds dist/), the tarball installed into a scratch project
 * outside the repository, a consumer type-checked by tsc under `module: nodenext` strict, compiled, and run with
 * plain `node` (no tsx) against a live sandbox on loopback: 8 concurrent payments.create on one key, 5 rounds.
 */

const run = promisify(execFile);
const sdkDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = path.resolve(sdkDir, '../..');
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');

const CONSUMER = `import { readFileSync } from 'node:fs';
import { createDispersaClient, type DispersaClient, InvalidRequestError, type Payment } from '@dispersa/sdk';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(\`set \${name}\`);
  return value;
};

const dispersa: DispersaClient = createDispersaClient({
  baseUrl: env('DISPERSA_BASE_URL'),
  apiKey: env('DISPERSA_API_KEY'),
  privateKey: readFileSync(env('DISPERSA_PRIVATE_KEY_FILE'), 'utf8'),
});

const errors: string[] = [];
const states: Record<string, number> = {};
for (let round = 0; round < 5; round++) {
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, (_, i): Promise<Payment> =>
      dispersa.payments.create({
        amountMinor: \`\${round + 1}\${i}00\`,
        currency: 'VES',
        rail: 'PM',
        beneficiary: '04141234567',
        bankCode: '0102',
        docType: 'V',
        docNumber: '12345678',
      }),
    ),
  );
  for (const r of results) {
    if (r.status === 'fulfilled') states[r.value.state] = (states[r.value.state] ?? 0) + 1;
    else errors.push(String(r.reason));
  }
}
const invalid = await dispersa.payments.create({ amountMinor: 'x', currency: 'VES', beneficiaryId: 'ben_x' }).catch(
  (e: unknown) => e,
);
const version = await dispersa.version();
console.log(JSON.stringify({ errors, states, invalidIsTyped: invalid instanceof InvalidRequestError, api: version.apiVersion }));
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noUncheckedIndexedAccess: true,
    outDir: 'out',
    types: ['node'],
    // @types/node from the repository: the scratch project installs nothing from a registry.
    typeRoots: [path.join(repoRoot, 'node_modules/@types')],
  },
  files: ['consumer.ts'],
};

let scratch: string;
let server: TestServer;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'dispersa-packed-'));
  server = await startTestServer();
}, 120_000);
afterAll(async () => {
  await server?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the packed SDK', () => {
  it('installs from its tarball, type-checks under nodenext strict, and runs with plain node: 8 × 5 payments, no error', async () => {
    const packDir = path.join(scratch, 'pack');
    const project = path.join(scratch, 'consumer');
    await run('mkdir', ['-p', packDir, project]);
    // npm pack runs prepack, which builds dist/ from the sources.
    await run('npm', ['pack', '--pack-destination', packDir, '--silent'], { cwd: sdkDir, timeout: 120_000 });
    const [tarball] = (await readdir(packDir)).filter((f) => f.endsWith('.tgz'));
    expect(tarball).toMatch(/^dispersa-sdk-\d+\.\d+\.\d+\.tgz$/);
    const listing = (await run('tar', ['-tzf', path.join(packDir, tarball!)])).stdout.split('\n');
    expect(listing).toContain('package/dist/index.js');
    expect(listing).toContain('package/dist/index.d.ts');
    expect(listing).toContain('package/README.md');
    expect(listing.some((f) => f.startsWith('package/src/') || f.startsWith('package/test/'))).toBe(false);

    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    await run(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(packDir, tarball!)],
      { cwd: project, timeout: 120_000 },
    );
    await writeFile(path.join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    await writeFile(path.join(project, 'consumer.ts'), CONSUMER);
    // Type-checks and compiles; a failure prints tsc's diagnostics.
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 }).catch((err) => {
      throw new Error(`tsc failed in the consumer project:\n${err.stdout}${err.stderr}`);
    });

    const client = await server.newClient({ fundMinor: 50_000_000n });
    const keyFile = path.join(project, 'key.pem');
    await writeFile(keyFile, testKeyPair(0).privatePem, { mode: 0o600 });
    const { stdout } = await run(process.execPath, ['out/consumer.js'], {
      cwd: project,
      timeout: 120_000,
      env: {
        PATH: process.env['PATH'] ?? '',
        DISPERSA_BASE_URL: server.baseUrl,
        DISPERSA_API_KEY: client.apiKey,
        DISPERSA_PRIVATE_KEY_FILE: keyFile,
      },
    });
    expect(JSON.parse(stdout)).toEqual({ errors: [], states: { completed: 40 }, invalidIsTyped: true, api: 'v2' });
  }, 240_000);
});
