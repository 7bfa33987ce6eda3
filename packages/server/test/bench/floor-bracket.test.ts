import { describe, expect, it } from 'vitest';
import { bracketFloor, type FloorResult, floorSpread } from '../../bench/floor.ts';
import { formatTable } from '../../bench/report.ts';

const reading = (scenario: FloorResult['scenario'], rps: number, cpu: number | null): FloorResult => ({
  scenario,
  rps,
  p50: 1,
  p99: 6,
  cpuMsPerRequest: cpu,
  measured: [rps],
  signedInLoop: 0,
});

describe('the floor bracketing the service runs', () => {
  it('quotes the mean of the readings before and after, keeps both, and prints how far apart they lie', () => {
    const floor = bracketFloor(
      [reading('create-payment', 5000, 0.1), reading('get-payment', 15000, 0.06)],
      [reading('create-payment', 5200, 0.12), reading('get-payment', 9000, null)],
    );
    expect(floor).toEqual([
      {
        scenario: 'create-payment',
        rps: 5100,
        p50: 1,
        p99: 6,
        cpuMsPerRequest: 0.11,
        measured: [5000, 5200],
        signedInLoop: 0,
      },
      {
        scenario: 'get-payment',
        rps: 12000,
        p50: 1,
        p99: 6,
        cpuMsPerRequest: null,
        measured: [15000, 9000],
        signedInLoop: 0,
      },
    ]);
    expect(floorSpread(floor[1]!)).toBeCloseTo(0.5);
    expect(floorSpread(reading('get-payment', 9000, null))).toBe(0);
    const table = formatTable([], floor);
    expect(table).toContain('floor GET /v2/payments/{id}: the mean of 15000 (before the service) and 9000 (after)');
    expect(table).toContain('50.0 % apart');
  });

  it('adds up what the generator signed in its loop, and says the floor is understated when it did', () => {
    const floor = bracketFloor(
      [{ ...reading('create-payment', 5000, 0.1), signedInLoop: 7 }],
      [{ ...reading('create-payment', 5200, 0.1), signedInLoop: 5 }],
    );
    expect(floor[0]!.signedInLoop).toBe(12);
    expect(formatTable([], floor)).toContain(
      "floor POST /v2/payments: 12 requests signed in the generator's loop: the floor is understated",
    );
    expect(formatTable([], [reading('create-payment', 5000, 0.1)])).not.toContain('understated');
  });

  it('a scenario measured only before stays as it was', () => {
    const before = [reading('get-payment', 15000, 0.06)];
    expect(bracketFloor(before, [])).toEqual(before);
    expect(formatTable([], before)).not.toContain('apart');
  });
});
