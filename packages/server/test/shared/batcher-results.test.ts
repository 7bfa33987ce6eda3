import { describe, expect, it } from 'vitest';
import { resultsAt } from '../../src/shared/batcher.ts';

describe('resultsAt', () => {
  it('answers each position from its answer, in position order whatever the order of the answers', () => {
    const results = resultsAt(
      3,
      [
        [2, 'c'],
        [0, 'a'],
        [1, 'b'],
      ],
      'no answer',
    );
    expect(results).toEqual([
      { ok: true, value: 'a' },
      { ok: true, value: 'b' },
      { ok: true, value: 'c' },
    ]);
  });

  it('fails a position left without an answer, each with its own error naming what is missing', () => {
    const results = resultsAt(3, [[1, 'b']], 'consume_nonces gave no verdict');
    expect(results[1]).toEqual({ ok: true, value: 'b' });
    for (const i of [0, 2]) {
      const r = results[i]!;
      expect(r.ok).toBe(false);
      expect(!r.ok && r.error instanceof Error && r.error.message).toBe('consume_nonces gave no verdict');
    }
    expect(!results[0]!.ok && !results[2]!.ok && results[0]!.error !== results[2]!.error).toBe(true);
  });
});
