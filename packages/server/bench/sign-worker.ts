import { parentPort, workerData } from 'node:worker_threads';
import { type LoadJob, requestOf } from './load-job.ts';
import { privateKeyOf, signatureOf } from './signing.ts';

/**
 * Worker thread: signs requests [0, perLane) of the lanes it is given, one index at a time across all its lanes
 * so that they stay even when the deadline cuts the work short; only the signatures go back.
 */

export interface SignWork {
  job: Pick<LoadJob, 'scenario' | 'runTag' | 'lanes'>;
  lanes: number[];
  perLane: number;
  /** Epoch ms: stop signing then (the driver signs the rest in the loop). */
  deadline: number;
}

const work = workerData as SignWork;
const keys = work.lanes.map((lane) => privateKeyOf(work.job.lanes[lane]!.privatePem));
const out = work.lanes.map((lane) => ({ lane, signatures: [] as string[] }));
for (let i = 0; i < work.perLane && Date.now() < work.deadline; i++) {
  out.forEach((o, n) => {
    o.signatures.push(signatureOf(requestOf(work.job, o.lane, i), keys[n]!));
  });
}
parentPort!.postMessage(out);
