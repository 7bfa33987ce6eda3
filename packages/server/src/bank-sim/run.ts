import { type BankSim, startBankSim } from './bank-sim.ts';

/**
 * Starts the bank simulator from environment variables (what `dispersa bank-sim` and main.ts run).
 * Throws BankSimEnvError naming the variable when one is missing or wrong.
 */

export class BankSimEnvError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'BankSimEnvError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, max: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^\d{1,9}$/.test(value) || Number(value) > max) {
    throw new BankSimEnvError(name, `must be an integer between 0 and ${max}, got "${value}"`);
  }
  return Number(value);
}

export async function runBankSimFromEnv(env: Env = process.env): Promise<BankSim> {
  const keyId = text(env, 'BANK_SIM_KEY_ID');
  const secret = text(env, 'BANK_SIM_SECRET');
  if (keyId === undefined) throw new BankSimEnvError('BANK_SIM_KEY_ID', 'is required');
  // The same floor the service puts on DISPERSA_BANK_GATEWAY_SECRET, so the pair can be shared.
  if (secret === undefined || secret.length < 32) {
    throw new BankSimEnvError('BANK_SIM_SECRET', 'is required, at least 32 characters');
  }
  const opening = text(env, 'BANK_SIM_OPENING_BALANCE_VES') ?? '0';
  if (!/^\d{1,30}$/.test(opening)) {
    throw new BankSimEnvError('BANK_SIM_OPENING_BALANCE_VES', 'must be a non-negative integer of minor units');
  }
  const ownBankCode = text(env, 'BANK_SIM_OWN_BANK_CODE') ?? '0102';
  if (!/^\d{4}$/.test(ownBankCode)) throw new BankSimEnvError('BANK_SIM_OWN_BANK_CODE', 'must be 4 digits');
  return startBankSim({
    port: integer(env, 'BANK_SIM_PORT', 0, 65535),
    host: text(env, 'BANK_SIM_HOST') ?? '127.0.0.1',
    keyId,
    secret,
    ownBankCode,
    openingBalances: { VES: BigInt(opening) },
    settleMs: integer(env, 'BANK_SIM_SETTLE_MS', 2000, 86_400_000),
  });
}
