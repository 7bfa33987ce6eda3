import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { flagsOf, nearestFlag, parseFlags, UsageError } from '../../src/cli/args.ts';
import { parseLimitFlag } from '../../src/cli/commands/admin.ts';
import { COMMANDS, findCommand } from '../../src/cli/commands.ts';
import { createProgress } from '../../src/cli/progress.ts';
import { renderPretty } from '../../src/cli/table.ts';

describe('command lookup', () => {
  it('takes the longest command name at the front, leaving flags and arguments', () => {
    expect(findCommand(['payments', 'get', 'pay_1', '--wait'])).toMatchObject({
      spec: { name: 'payments get' },
      rest: ['pay_1', '--wait'],
    });
    expect(findCommand(['--pretty', 'admin', 'clients', 'get', 'c1'])).toMatchObject({
      spec: { name: 'admin clients get' },
      rest: ['--pretty', 'c1'],
    });
    expect(findCommand(['me', '--api-key', 'payments'])?.spec.name).toBe('me');
    expect(findCommand(['payments'])).toBeNull();
    expect(findCommand(['--api-key', 'x', 'me'])).toBeNull();
  });

  it('every command loads a runner, and docs/cli.md documents every command', async () => {
    const doc = await readFile(new URL('../../../../docs/cli.md', import.meta.url), 'utf8');
    for (const spec of COMMANDS) {
      expect(typeof (await spec.load()), spec.name).toBe('function');
      expect(doc, `docs/cli.md has no section for ${spec.name}`).toContain(`### \`dispersa ${spec.name}`);
    }
    expect(new Set(COMMANDS.map((c) => c.name)).size).toBe(COMMANDS.length);
  });
});

describe('flags', () => {
  it('refuses unknown flags and checks whole numbers', () => {
    expect(() => parseFlags(['--nope'], {}, 'me')).toThrow(/^unknown flag --nope$/);
    const { values } = parseFlags(['--limit', '20x'], { limit: { type: 'string', description: '' } });
    expect(() => flagsOf(values, 'x').integer('limit')).toThrow(/whole number/);
    expect(() => flagsOf({}, 'x').required('alias')).toThrow('--alias is required');
  });

  it('suggests the flag most likely meant, and none when nothing is close', () => {
    const names = ['amount-minor', 'rail', 'beneficiary', 'bank-code', 'doc-type', 'doc-number', 'idempotency-key'];
    expect(nearestFlag('--amount', names)).toBe('amount-minor');
    expect(nearestFlag('--amount-minr', names)).toBe('amount-minor');
    expect(nearestFlag('--bankcode', names)).toBe('bank-code');
    expect(nearestFlag('--benefciary', names)).toBe('beneficiary');
    expect(nearestFlag('--idempotency', names)).toBe('idempotency-key');
    expect(nearestFlag('--colour', names)).toBeUndefined();
    expect(nearestFlag('-x', ['help', 'pretty'])).toBeUndefined();
    const specs = { 'amount-minor': { type: 'string' as const, description: '' } };
    expect(() => parseFlags(['--amount=5'], specs, 'pay')).toThrow(
      'unknown flag --amount; did you mean --amount-minor?',
    );
  });

  it('reads an argument or a flag value that starts with a dash as a value, not as flags', () => {
    const specs = {
      reason: { type: 'string' as const, description: '' },
      pretty: { type: 'boolean' as const, description: '' },
      help: { type: 'boolean' as const, short: 'h', description: '' },
    };
    // A base64url signing key id starts with '-' one time in 64.
    expect(parseFlags(['-xdGOYrZUGJuy3kF61fSiMWPtw5J6yc_j37Rqju4XmE', '--pretty'], specs)).toEqual({
      values: { pretty: true },
      positionals: ['-xdGOYrZUGJuy3kF61fSiMWPtw5J6yc_j37Rqju4XmE'],
    });
    // ... and with '--' one time in 4,096 (the CI run that found it: "--5MhyhlZSIQRNCNWlrtpv7AFghkK7MKfxh8jvIiMjw").
    expect(parseFlags(['--5MhyhlZSIQRNCNWlrtpv7AFghkK7MKfxh8jvIiMjw', '--pretty'], specs)).toEqual({
      values: { pretty: true },
      positionals: ['--5MhyhlZSIQRNCNWlrtpv7AFghkK7MKfxh8jvIiMjw'],
    });
    expect(parseFlags(['--Pretty'], specs).positionals).toEqual(['--Pretty']);
    expect(() => parseFlags(['--prety'], specs)).toThrow('unknown flag --prety; did you mean --pretty?');
    expect(parseFlags(['a', '--reason', '-late', 'b', '-h'], specs)).toEqual({
      values: { reason: '-late', help: true },
      positionals: ['a', 'b'],
    });
    expect(parseFlags(['--pretty', '--', '--not-a-flag'], specs).positionals).toEqual(['--not-a-flag']);
    expect(() => parseFlags(['-x'], specs)).toThrow('unknown flag -x');
    expect(() => parseFlags(['--reason'], specs)).toThrow(UsageError);
  });

  it('reads per-rail limits', () => {
    expect(parseLimitFlag('pm:100:1000')).toEqual({ rail: 'PM', perPaymentMaxMinor: '100', dailyMaxMinor: '1000' });
    expect(() => parseLimitFlag('PM:1.5:2')).toThrow(UsageError);
    expect(() => parseLimitFlag('PM:1')).toThrow(UsageError);
  });
});

describe('pretty tables', () => {
  it('renders a page as rows with dotted columns and says where the walk continues', () => {
    const text = renderPretty({
      data: [
        { id: 'a', state: 'completed', extra: { code: null } },
        { id: 'b', state: 'unknown', extra: { code: 'x' } },
      ],
      hasMore: true,
      nextCursor: 'b',
    });
    expect(text.split('\n')).toEqual([
      'id  state      extra.code',
      '--  ---------  ----------',
      'a   completed  -',
      'b   unknown    x',
      'more: repeat with --cursor b (or --all)',
      '',
    ]);
  });

  it('renders an object as key/value lines and its lists of objects as tables', () => {
    const text = renderPretty({ keyId: 'k', limits: [{ rail: 'PM', max: '1' }], tags: ['a', 'b'] });
    expect(text).toBe('keyId  k\ntags   a,b\n\nlimits:\nrail  max\n----  ---\nPM    1\n');
    expect(renderPretty([])).toBe('(no items)\n');
  });
});

describe('progress', () => {
  it('writes whole lines at most once per interval when not on a terminal, then a summary', () => {
    const written: string[] = [];
    let t = 0;
    const p = createProgress({
      stream: { write: (s: string) => written.push(s) },
      label: 'payments',
      inPlace: false,
      minIntervalMs: 1000,
      now: () => t,
    });
    p.update(20, '1 page');
    t = 500;
    p.update(40, '2 pages');
    t = 1500;
    p.update(60, '3 pages');
    p.done('60 in 3 pages');
    expect(written).toEqual(['payments: 20 (1 page)\n', 'payments: 60 (3 pages)\n', 'payments: 60 in 3 pages\n']);
  });
});
