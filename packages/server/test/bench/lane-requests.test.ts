import { describe, expect, it } from 'vitest';
import { laneRequests } from '../../bench/lane-requests.ts';

describe("a lane's pre-signed requests in one buffer", () => {
  it('gives back each request exactly as built, in order, whatever its length', () => {
    const built = (i: number, sig: string) => Buffer.from(`GET /${'x'.repeat(i * 7)} ${sig}\r\n\r\n`, 'latin1');
    const sigs = ['a', 'bb', '', 'dddd', 'e'];
    const lane = laneRequests(sigs, built);
    expect(lane.count).toBe(5);
    sigs.forEach((sig, i) => {
      expect(lane.at(i).equals(built(i, sig))).toBe(true);
    });
  });

  it('a request is a view into the one buffer, not a copy', () => {
    // Larger than Node's pool of small buffers, so a copy would not share the one buffer by chance.
    const lane = laneRequests(['s1', 's2'], (i, sig) => Buffer.from(`${i}:${sig}:${'y'.repeat(3000)}`));
    expect(lane.at(0).buffer).toBe(lane.at(1).buffer);
    expect(lane.at(1).byteOffset).toBe(lane.at(0).byteOffset + lane.at(0).length);
    expect(lane.at(1).toString().slice(0, 5)).toBe('1:s2:');
  });

  it('an empty lane has no requests', () => {
    expect(laneRequests([], () => Buffer.alloc(1)).count).toBe(0);
  });
});
