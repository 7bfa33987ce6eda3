import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BankSimEnvError, runBankSimFromEnv } from '../../src/bank-sim/run.ts';
import { KEY_ID, SECRET, signedRequest } from './sim-fixture.ts';

const MAIN = fileURLToPath(new URL('../../src/bank-sim/main.ts', import.meta.url));

describe('runBankSimFromEnv', () => {
  it('names the variable that is missing or wrong', async () => {
    await expect(runBankSimFromEnv({ BANK_SIM_SECRET: SECRET })).rejects.toThrow(/BANK_SIM_KEY_ID/);
    await expect(runBankSimFromEnv({ BANK_SIM_KEY_ID: KEY_ID, BANK_SIM_SECRET: 'short' })).rejects.toThrow(
      /BANK_SIM_SECRET/,
    );
    await expect(
      runBankSimFromEnv({ BANK_SIM_KEY_ID: KEY_ID, BANK_SIM_SECRET: SECRET, BANK_SIM_PORT: 'http' }),
    ).rejects.toBeInstanceOf(BankSimEnvError);
  });

  it('starts a simulator with the opening balance given', async () => {
    const sim = await runBankSimFromEnv({
      BANK_SIM_KEY_ID: KEY_ID,
      BANK_SIM_SECRET: SECRET,
      BANK_SIM_OPENING_BALANCE_VES: '5000',
    });
    try {
      expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await signedRequest(sim.url, 'GET', '/v1/balance?currency=VES')).json).toEqual({
        currency: 'VES',
        balanceMinor: '5000',
      });
    } finally {
      await sim.close();
    }
  });
});

describe('main.ts as a process', () => {
  it('prints its URL, answers, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      env: { ...process.env, BANK_SIM_PORT: '0', BANK_SIM_KEY_ID: KEY_ID, BANK_SIM_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no URL printed: ${out}`)), 20_000);
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      expect((await signedRequest(url, 'GET', '/v1/balance?currency=VES')).status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('exits 2 naming the variable when the secret is missing', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      env: { ...process.env, BANK_SIM_KEY_ID: KEY_ID, BANK_SIM_SECRET: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, 20_000);
      child.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    expect(code).toBe(2);
    expect(err).toContain('BANK_SIM_SECRET');
  });
});
