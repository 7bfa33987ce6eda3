import { BankSimEnvError, runBankSimFromEnv } from './run.ts';

/** `node --import tsx packages/server/src/bank-sim/main.ts`: the bank simulator as a process of its own. */

try {
  const sim = await runBankSimFromEnv(process.env);
  process.stdout.write(`bank-sim listening on ${sim.url}\n`);
  const stop = () => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  if (!(error instanceof BankSimEnvError)) throw error;
  process.stderr.write(`bank-sim: ${error.message}\n`);
  process.exit(2);
}
