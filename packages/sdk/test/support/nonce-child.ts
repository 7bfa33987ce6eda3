/**
 * Child process for the multi-process nonce test. Says "ready" on stderr, waits for the go file so that all
 * children draw at the same time, draws `count` nonces from the shared state file and prints them one a line.
 * Run as: node --import tsx nonce-child.ts <statePath> <count> <goPath>
 */
import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { createFileNonceGenerator } from '../../src/nonce-file.ts';

const [statePath, countText, goPath] = process.argv.slice(2);
if (!statePath || !countText || !goPath) throw new Error('usage: nonce-child.ts <statePath> <count> <goPath>');
// No fsync: the test is about exclusion between processes, not power loss. A long reseed pause keeps the
// group's numbers consecutive however slowly the children start.
const generator = createFileNonceGenerator({
  statePath,
  fsync: false,
  maxWaitMs: 20_000,
  reseedAfterMs: 600_000,
});
process.stderr.write('ready\n');
const deadline = Date.now() + 30_000;
while (!existsSync(goPath)) {
  if (Date.now() > deadline) throw new Error('no go file');
  await delay(2);
}
const out: string[] = [];
for (let i = 0; i < Number(countText); i++) {
  out.push(await generator.next());
  // A pause between draws spreads each child's draws over time, so the children overlap even on a loaded machine
  // where one could otherwise draw all of its nonces within one time slice.
  await delay(1);
}
process.stdout.write(`${out.join('\n')}\n`);
