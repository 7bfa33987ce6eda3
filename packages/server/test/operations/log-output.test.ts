import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { logDestination, prettyLine } from '../../src/log-output.ts';

describe('log output', () => {
  it('stdout that is not a terminal gets pino JSON untouched', () => {
    const pipe = Object.assign(new PassThrough(), { isTTY: false }) as unknown as NodeJS.WriteStream;
    expect(logDestination(pipe)).toBeUndefined();
  });

  it('a terminal gets one readable line per event, without the fields every line repeats', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true }) as unknown as NodeJS.WriteStream & PassThrough;
    const written: string[] = [];
    tty.on('data', (d: Buffer) => written.push(d.toString()));
    const line = JSON.stringify({
      level: 30,
      time: Date.UTC(2026, 0, 1, 12, 0, 1),
      pid: 1,
      hostname: 'h',
      service: 'dispersa',
      msg: 'database ready',
      applied: 11,
      note: 'two words',
    });
    logDestination(tty)!.write(`${line}\n`);
    expect(written.join('')).toMatch(/^\d\d:\d\d:\d\d INFO {2}database ready applied=11 note="two words"\n$/);
    expect(prettyLine('not json')).toBe('not json\n');
  });
});
