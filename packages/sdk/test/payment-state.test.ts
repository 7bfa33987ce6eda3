import { describe, expect, it } from 'vitest';
import { isFinalState, isSimulated, normalizeState } from '../src/payment-state.ts';

describe('normalizeState', () => {
  it.each([
    ['pending', 'pending'],
    ['processing', 'processing'],
    ['completed', 'completed'],
    ['failed', 'failed'],
    ['unknown', 'unknown'],
    ['settling', 'unknown'],
    ['FAILED', 'unknown'],
    ['failed ', 'unknown'],
    ['', 'unknown'],
    [null, 'unknown'],
    [undefined, 'unknown'],
    [3, 'unknown'],
  ])('%s -> %s (an unrecognised state is never read as failed)', (input, expected) => {
    expect(normalizeState(input)).toBe(expected);
  });

  it('only completed and failed are final', () => {
    expect(['pending', 'processing', 'completed', 'failed', 'unknown', 'new'].filter(isFinalState)).toEqual([
      'completed',
      'failed',
    ]);
  });

  it('treats an absent simulado as simulated', () => {
    expect(isSimulated({})).toBe(true);
    expect(isSimulated({ simulado: true })).toBe(true);
    expect(isSimulated({ simulado: false })).toBe(false);
  });
});
