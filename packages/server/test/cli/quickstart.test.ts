import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { PM_DESTINATION } from './cli-fixture.ts';
import { runCli } from './cli-process.ts';

/**
 * The quick start of docs/cli.md, as a newcomer does it: start the sandbox (`npm start`), then pay with the CLI
 * from the same directory and no configuration at all; the CLI finds the demo client and operator token the
 * sandbox left in ./.dispersa/sandbox. Only the ports differ (any free port, so tests never collide).
 */

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('from a fresh sandbox to a completed payout with the CLI in under a minute', async () => {
  const started = Date.now();
  dir = await mkdtemp(path.join(tmpdir(), 'dispersa-quickstart-'));
  const dataDir = path.join(dir, '.dispersa', 'sandbox');
  const service = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
    cwd: REPO,
    env: {
      PATH: process.env['PATH'],
      DISPERSA_PORT: '0',
      DISPERSA_ADMIN_PORT: '0',
      DISPERSA_DATA_DIR: dataDir,
      DISPERSA_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  service.stdout!.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  service.stderr!.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => service.on('close', resolve));
  try {
    let baseUrl: string | undefined;
    let adminUrl: string | undefined;
    while (baseUrl === undefined || adminUrl === undefined) {
      if (Date.now() - started > 45_000 || service.exitCode !== null) throw new Error(`no banner:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
      baseUrl = /public API\s+(\S+)/.exec(output)?.[1];
      adminUrl = /operator API\s+(\S+)/.exec(output)?.[1];
    }
    // No configuration at all, on ports other than the defaults: the sandbox recorded where it listens next to
    // the demo credentials, and the CLI calls there.
    const env = { HOME: dir };
    const me0 = await runCli(['me'], { env, cwd: dir });
    expect(me0.code, me0.stderr).toBe(0);
    expect(me0.stderr).toContain(`at ${baseUrl}`);
    expect(me0.json()).toMatchObject({ environment: 'sandbox' });

    const paid = await runCli(['pay', '--amount-minor', '150000', ...PM_DESTINATION], { env, cwd: dir });
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.json().state).toBe('completed');
    expect(paid.stderr).toMatch(/using sandbox demo client "Demo VES"/);
    expect(Date.now() - started).toBeLessThan(60_000);

    // Four CLI processes paying at once on the one demo key: the nonce file serialises their writes, none fails.
    const runs = await Promise.all(
      Array.from({ length: 4 }, (_, worker) =>
        (async () => {
          const codes: string[] = [];
          for (let i = 0; i < 3; i++) {
            const r = await runCli(['pay', '--amount-minor', `2${worker}${i}00`, ...PM_DESTINATION], { env, cwd: dir });
            codes.push(r.code === 0 ? r.json().state : `exit ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
          }
          return codes;
        })(),
      ),
    );
    expect(runs.flat()).toEqual(Array(12).fill('completed'));

    // The operator side works the same way, with the token the sandbox generated.
    const listed = await runCli(['admin', 'payments', 'list', '--state', 'completed'], { env, cwd: dir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().data.map((p: { intentId: string }) => p.intentId)).toContain(paid.json().intentId);

    // The ready command the banner printed, run exactly as printed (a shell line with npx) from the repo root.
    const ready =
      /^\s*(DISPERSA_BASE_URL=\S+ DISPERSA_API_KEY=\S+ DISPERSA_PRIVATE_KEY_FILE=\S+ npx dispersa me)$/m.exec(
        output,
      )?.[1];
    expect(ready, output).toBeDefined();
    const me = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const sh = spawn('bash', ['-c', ready!], { cwd: REPO, env: { PATH: process.env['PATH'], HOME: dir } });
      let stdout = '';
      sh.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
      });
      sh.on('close', (code) => resolve({ code, stdout }));
    });
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ environment: 'sandbox', limitsConfigured: true });
  } finally {
    service.kill('SIGTERM');
  }
  // SIGTERM shuts the service down gracefully, with a zero exit status.
  expect(await exited).toBe(0);
}, 120_000);
