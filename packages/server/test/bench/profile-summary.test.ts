import { describe, expect, it } from 'vitest';
import { summarise } from '../../bench/profile-summary.ts';

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0 },
  children,
});

describe('the CPU profile summary', () => {
  it("charges the service's own frames, run from source or from its build, with what they call", () => {
    const profile = {
      nodes: [
        frame(1, '(root)', '', [2, 3]),
        frame(2, 'handler', 'file:///repo/packages/server/dist/payments/routes.js', [4]),
        frame(3, 'reserve', 'file:///repo/packages/server/src/payments/reserve.ts'),
        frame(4, 'stringify', 'file:///repo/node_modules/fast-json-stringify/index.js'),
      ],
      samples: [4, 4, 3, 1],
      timeDeltas: [1000, 1000, 1000, 1000],
    };
    const { ownTotal, totalMs } = summarise(profile);
    expect(totalMs).toBe(4);
    expect(ownTotal.map((h) => [h.name.split(' ')[0], h.ms])).toEqual([
      ['handler', 2],
      ['reserve', 1],
    ]);
  });
});
