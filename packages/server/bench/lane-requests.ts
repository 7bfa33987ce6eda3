/**
 * A lane's pre-signed requests, built before the timed run, held as one buffer and the offsets where each request
 * ends. Held as a buffer each (and their signatures as strings), 160,000 GETs made a heap of 320,000 objects that
 * the collector walked during the run, in the cache the server shares: the floor's GET read 12,200-13,800 a second
 * with such a pool against 13,000-15,300 with one an eighth its size (performance-log.md, "Thirty-fifth session").
 */
export interface LaneRequests {
  count: number;
  /** Request i's bytes: a view into the lane's buffer, no copy. */
  at(i: number): Buffer;
}

export function laneRequests(
  signatures: readonly string[],
  build: (i: number, signature: string) => Buffer,
): LaneRequests {
  const parts = signatures.map((sig, i) => build(i, sig));
  const ends = new Uint32Array(parts.length);
  let end = 0;
  parts.forEach((part, i) => {
    end += part.length;
    ends[i] = end;
  });
  const bytes = Buffer.concat(parts, end);
  return {
    count: parts.length,
    at: (i) => bytes.subarray(i === 0 ? 0 : ends[i - 1]!, ends[i]!),
  };
}
