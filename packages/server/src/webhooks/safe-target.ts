import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which webhook targets the service may dial: https only, and hosts whose every address is public unicast.
 * Anything that reaches the service's own machine or network (loopback, RFC 1918, ULA, link-local, CGNAT,
 * metadata endpoints at 169.254.169.254, ...) is refused, including through IPv4-mapped, IPv4-compatible
 * and NAT64 spellings. The rule is an allow-list: an address is accepted only when it is known public.
 * With allowInsecure (DISPERSA_WEBHOOK_ALLOW_INSECURE, development and tests) scheme and address rules
 * are lifted; userinfo stays refused.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Maps a host name to its addresses. Injectable so tests never need DNS. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export type AddressCheck = { ok: true } | { ok: false; range: string };

const HTTPS_ONLY = new Set(['https:']);
const HTTP_OR_HTTPS = new Set(['https:', 'http:']);
const MAX_URL_LENGTH = 2048;

function ipv4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** The range name of an address; 'unicast' is the only acceptable answer. */
function rangeOf(addr: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (addr.kind() === 'ipv4') return (addr as ipaddr.IPv4).range();
  const v6 = addr as ipaddr.IPv6;
  if (v6.zoneId !== undefined) return 'zoned';
  const p = v6.parts;
  const range = v6.range();
  switch (range) {
    // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d reach the embedded IPv4 address: judge that one.
    case 'ipv4Mapped':
    case 'rfc6145': {
      const inner = rangeOf(ipv4FromParts(p[6]!, p[7]!));
      return inner === 'unicast' ? 'unicast' : `${range}:${inner}`;
    }
    case 'rfc6052': {
      // 64:ff9b::/96 is the well-known NAT64 prefix: an IPv6-only host reaches IPv4 through it, so judge
      // the embedded address. 64:ff9b:1::/48 is for local translators: never public.
      if (p[2] !== 0 || p[3] !== 0 || p[4] !== 0 || p[5] !== 0) return 'rfc6052:local';
      const inner = rangeOf(ipv4FromParts(p[6]!, p[7]!));
      return inner === 'unicast' ? 'unicast' : `nat64:${inner}`;
    }
    case 'unicast':
      // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) is not in any ipaddr.js range: refuse it whole.
      if (p.slice(0, 6).every((x) => x === 0)) return 'ipv4Compatible';
      // Global unicast is 2000::/3; anything else left over is unallocated space.
      if ((p[0]! & 0xe000) !== 0x2000) return 'unallocated';
      return 'unicast';
    default:
      // Includes 6to4 and teredo: tunnels whose far end is not the address itself.
      return range;
  }
}

/** Whether one literal IP address (v4 or v6, no brackets) is a public unicast address. */
export function checkAddress(ip: string): AddressCheck {
  if (ip.includes('%')) return { ok: false, range: 'zoned' };
  // Only the canonical dotted quad: shorthand or octal IPv4 text is read differently by different parsers.
  if (!ip.includes(':') && isIP(ip) !== 4) return { ok: false, range: 'invalid' };
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // ipaddr.js reads "::a.b.c.d" as IPv4-mapped, but the kernel dials it as ::a.b.c.d (IPv4-compatible):
    // rewrite IPv6 text into the WHATWG serialisation (hex groups only) so the address judged is the one
    // dialled. parse, not process: a mapped address must reach rangeOf as IPv6.
    addr = ipaddr.parse(ip.includes(':') ? hostOf(new URL(`http://[${ip}]/`)) : ip);
  } catch {
    return { ok: false, range: 'invalid' };
  }
  const range = rangeOf(addr);
  return range === 'unicast' ? { ok: true } : { ok: false, range };
}

export type TargetRejection =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'userinfo_not_allowed'
  | 'forbidden_address'
  | 'unresolvable';

export type TargetRejected = { ok: false; reason: TargetRejection; detail: string };

export interface TargetOptions {
  allowInsecure: boolean;
}

/** The host of a URL as net.connect sees it: IPv6 without brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Synchronous rules: URL syntax, scheme, userinfo, and the address rule for IP literals. The WHATWG parser
 * has already turned decimal, hex and octal IPv4 spellings (2130706433, 0x7f.1, 0177.0.0.1) into dotted
 * quads, so a literal is always recognised here.
 */
export function parseTarget(url: string, { allowInsecure }: TargetOptions): { ok: true; url: URL } | TargetRejected {
  if (url.length > MAX_URL_LENGTH) return { ok: false, reason: 'invalid_url', detail: 'URL is too long' };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'invalid_url', detail: 'not a URL' };
  }
  if (!(allowInsecure ? HTTP_OR_HTTPS : HTTPS_ONLY).has(parsed.protocol)) {
    return { ok: false, reason: 'scheme_not_allowed', detail: `scheme ${parsed.protocol} is not allowed` };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'userinfo_not_allowed', detail: 'credentials in the URL are not allowed' };
  }
  const host = hostOf(parsed);
  if (host === '') return { ok: false, reason: 'invalid_url', detail: 'URL has no host' };
  if (!allowInsecure && (isIP(host) !== 0 || ipaddr.isValid(host))) {
    const check = checkAddress(host);
    if (!check.ok) return forbidden(host, check.range);
  }
  return { ok: true, url: parsed };
}

function forbidden(address: string, range: string): TargetRejected {
  return { ok: false, reason: 'forbidden_address', detail: `${address} is not a public address (${range})` };
}

/** Checks every resolved address; the first forbidden one rejects the whole set. */
export function checkResolved(addresses: readonly ResolvedAddress[]): { ok: true } | TargetRejected {
  for (const { address } of addresses) {
    const check = checkAddress(address);
    if (!check.ok) return forbidden(address, check.range);
  }
  return { ok: true };
}

export type CheckUrlResult = { ok: true; url: URL; addresses: string[] } | TargetRejected;

/**
 * The full check of a URL before it is registered: every address the host resolves to must be public.
 * Resolution can change before the call (DNS rebinding), so safe-post checks again at connect time.
 */
export async function checkUrl(url: string, options: TargetOptions & { resolve?: Resolver }): Promise<CheckUrlResult> {
  const target = parseTarget(url, options);
  if (!target.ok) return target;
  const host = hostOf(target.url);
  if (options.allowInsecure) return { ok: true, url: target.url, addresses: [] };
  if (isIP(host) !== 0) return { ok: true, url: target.url, addresses: [host] };
  let addresses: ResolvedAddress[];
  try {
    addresses = await (options.resolve ?? systemResolver)(host);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return { ok: false, reason: 'unresolvable', detail: `${host} does not resolve (${String(code ?? err)})` };
  }
  if (addresses.length === 0) return { ok: false, reason: 'unresolvable', detail: `${host} has no address` };
  const check = checkResolved(addresses);
  if (!check.ok) return check;
  return { ok: true, url: target.url, addresses: addresses.map((a) => a.address) };
}
