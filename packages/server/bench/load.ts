import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { generatorOf, type LoadJob, type LoadResult } from './load-job.ts';

const DRIVER = fileURLToPath(new URL('./load-driver.ts', import.meta.url));

export type DriverMessage =
  | { kind: 'started' }
  | { kind: 'done'; ok: true; result: LoadResult }
  | { kind: 'done'; ok: false; error: string };

/**
 * Runs one load job in a separate process (load-driver.ts) and returns its result. Bounded in time.
 * onStart: called when the timed run begins (pre-signing and the warm-up over).
 */
export async function runLoad(job: LoadJob, onStart?: () => void): Promise<LoadResult> {
  const child = fork(DRIVER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // Pre-signing has its own time limit; beyond both, a hard stop.
  const limitMs = (job.warmupSeconds + job.seconds + job.presignSeconds + 120) * 1000;
  return new Promise<LoadResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`load driver exceeded ${Math.round(limitMs / 1000)} s`));
    }, limitMs);
    child.on('message', (msg: DriverMessage) => {
      if (msg.kind === 'started') {
        onStart?.();
        return;
      }
      clearTimeout(timer);
      if (msg.ok) resolve(msg.result);
      else reject(new Error(`load driver failed: ${msg.error}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`load driver exited with ${code} before reporting`));
    });
    child.send({ ...job, generator: job.generator ?? generatorOf(process.env) } satisfies LoadJob);
  });
}
