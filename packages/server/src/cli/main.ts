import { runCli } from './run.ts';

/** Process entry of `dispersa` (bin/dispersa.mjs loads it through tsx). */

const stop = new AbortController();
const onSignal = () => {
  if (stop.signal.aborted) process.exit(130);
  stop.abort();
  // Long-running commands (listen, bank-sim, payments get --wait) stop on the signal; anything else is
  // given a moment to receive the answer it is waiting for, then the process goes.
  setTimeout(() => process.exit(130), 2_000).unref();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  signal: stop.signal,
});
