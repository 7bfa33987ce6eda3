import { describe, expect, it } from 'vitest';
import {
  checkAddress,
  checkResolved,
  checkUrl,
  parseTarget,
  type ResolvedAddress,
  type Resolver,
} from '../../src/webhooks/safe-target.ts';
import { FORBIDDEN } from './forbidden-forms.ts';

/** A resolver over a fixed table: no DNS, no traffic. */
function tableResolver(table: Record<string, string[]>): Resolver {
  return async (hostname) => {
    const found = table[hostname];
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const PUBLIC = ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'];

describe('checkAddress', () => {
  it.each(FORBIDDEN)('refuses %s (%s)', (ip, range) => {
    expect(checkAddress(ip)).toEqual({ ok: false, range });
  });

  it.each(PUBLIC)('accepts public unicast %s', (ip) => {
    expect(checkAddress(ip)).toEqual({ ok: true });
  });

  it('accepts IPv4-mapped and NAT64 forms of a public address (IPv6-only hosts reach IPv4 that way)', () => {
    expect(checkAddress('::ffff:8.8.8.8')).toEqual({ ok: true });
    expect(checkAddress('64:ff9b::808:808')).toEqual({ ok: true });
  });

  it('checkResolved refuses a set in which any one address is forbidden', () => {
    expect(checkResolved([{ address: '8.8.8.8', family: 4 }]).ok).toBe(true);
    const mixed = checkResolved([
      { address: '8.8.8.8', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ]);
    expect(mixed).toMatchObject({ ok: false, reason: 'forbidden_address' });
  });
});

describe('checkUrl', () => {
  const secure = { allowInsecure: false };

  it('accepts an https URL whose host resolves only to public addresses, and reports them', async () => {
    const resolve = tableResolver({ 'hooks.example.com': ['8.8.8.8', '2606:4700:4700::1111'] });
    const result = await checkUrl('https://hooks.example.com:8443/dispersa?x=1', { ...secure, resolve });
    expect(result).toMatchObject({ ok: true, addresses: ['8.8.8.8', '2606:4700:4700::1111'] });
  });

  it.each(FORBIDDEN.filter(([ip]) => !ip.includes('%') && ip !== 'not-an-ip'))(
    'refuses a host name resolving to %s',
    async (ip) => {
      const resolve = tableResolver({ 'hooks.example.com': [ip] });
      const result = await checkUrl('https://hooks.example.com/', { ...secure, resolve });
      expect(result).toMatchObject({ ok: false, reason: 'forbidden_address' });
    },
  );

  it('refuses a host name when only one of its addresses is forbidden', async () => {
    const resolve = tableResolver({ 'hooks.example.com': ['8.8.8.8', '192.168.0.10'] });
    expect(await checkUrl('https://hooks.example.com/', { ...secure, resolve })).toMatchObject({
      ok: false,
      reason: 'forbidden_address',
    });
  });

  it.each([
    'https://127.0.0.1/',
    'https://2130706433/',
    'https://0x7f000001/',
    'https://0x7f.1/',
    'https://017700000001/',
    'https://0177.0.0.1/',
    'https://127.1/',
    'https://%31%32%37.0.0.1/',
    'https://0/',
    'https://10.1/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[::127.0.0.1]/',
    'https://[64:ff9b::a00:1]/',
    'https://[fe80::1]/',
    'https://169.254.169.254/latest/meta-data/',
  ])('refuses the IP literal %s without resolving anything', async (url) => {
    const resolve: Resolver = async () => {
      throw new Error('must not resolve an IP literal');
    };
    expect(parseTarget(url, secure)).toMatchObject({ ok: false, reason: 'forbidden_address' });
    expect(await checkUrl(url, { ...secure, resolve })).toMatchObject({
      ok: false,
      reason: 'forbidden_address',
    });
  });

  it('accepts a public IP literal without resolving it', async () => {
    expect(await checkUrl('https://8.8.8.8/hook', secure)).toMatchObject({
      ok: true,
      addresses: ['8.8.8.8'],
    });
  });

  it('refuses other schemes, userinfo, and what is not a URL', async () => {
    const resolve = tableResolver({ 'hooks.example.com': ['8.8.8.8'] });
    const reason = async (url: string) => {
      const r = await checkUrl(url, { ...secure, resolve });
      return r.ok ? 'ok' : r.reason;
    };
    expect(await reason('http://hooks.example.com/')).toBe('scheme_not_allowed');
    expect(await reason('ftp://hooks.example.com/')).toBe('scheme_not_allowed');
    expect(await reason('file:///etc/passwd')).toBe('scheme_not_allowed');
    expect(await reason('https://user:pw@hooks.example.com/')).toBe('userinfo_not_allowed');
    expect(await reason('https://user@hooks.example.com/')).toBe('userinfo_not_allowed');
    expect(await reason('https://:pw@hooks.example.com/')).toBe('userinfo_not_allowed');
    expect(await reason('hooks.example.com/x')).toBe('invalid_url');
    expect(await reason('https://[fe80::1%25eth0]/')).toBe('invalid_url');
    expect(await reason(`https://hooks.example.com/${'a'.repeat(2100)}`)).toBe('invalid_url');
    expect(await reason('https://nowhere.example.com/')).toBe('unresolvable');
    // Unusual ports are fine.
    expect(await reason('https://hooks.example.com:1/')).toBe('ok');
    expect(await reason('https://hooks.example.com:65535/x')).toBe('ok');
  });

  it('refuses a name with no address at all', async () => {
    const resolve = tableResolver({ 'empty.example.com': [] });
    expect(await checkUrl('https://empty.example.com/', { ...secure, resolve })).toMatchObject({
      ok: false,
      reason: 'unresolvable',
    });
  });

  it('with allowInsecure, http and loopback or private targets pass; userinfo still does not', async () => {
    const insecure = { allowInsecure: true, resolve: tableResolver({}) };
    expect((await checkUrl('http://127.0.0.1:8080/hook', insecure)).ok).toBe(true);
    expect((await checkUrl('http://localhost/hook', insecure)).ok).toBe(true);
    expect((await checkUrl('https://[::1]/hook', insecure)).ok).toBe(true);
    expect((await checkUrl('http://10.0.0.5/hook', insecure)).ok).toBe(true);
    expect(await checkUrl('http://u:p@127.0.0.1/', insecure)).toMatchObject({
      ok: false,
      reason: 'userinfo_not_allowed',
    });
    expect(await checkUrl('ftp://127.0.0.1/', insecure)).toMatchObject({
      ok: false,
      reason: 'scheme_not_allowed',
    });
  });
});
