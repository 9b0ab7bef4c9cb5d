/**
 * Client IP addresses as the `ip` column and `Ip()` print them (Go's net.IP.String()):
 * IPv4-mapped IPv6 addresses as IPv4 (`::ffff:10.0.0.1` -> `10.0.0.1`), IPv6 in RFC 5952 form.
 */
import { isIP } from 'node:net';

/** The printable form of an address, or undefined when it is not an IP address. */
export function normalizeIp(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  let a = address.trim();
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  const zone = a.indexOf('%');
  if (zone >= 0) return undefined; // Go's ParseIP rejects zones
  const family = isIP(a);
  if (family === 4) return a;
  if (family !== 6) return undefined;
  const groups = ipv6Groups(a);
  if (groups === undefined) return undefined;
  // IPv4-mapped: ::ffff:a.b.c.d
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6] >> 8}.${groups[6] & 0xff}.${groups[7] >> 8}.${groups[7] & 0xff}`;
  }
  return formatIpv6(groups);
}

function ipv6Groups(a: string): number[] | undefined {
  let s = a.toLowerCase();
  // Embedded IPv4 tail -> two hex groups.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const parts = tail.split('.').map(Number);
    if (parts.length !== 4) return undefined;
    s = s.slice(0, lastColon + 1) + ((parts[0] << 8) | parts[1]).toString(16) + ':' + ((parts[2] << 8) | parts[3]).toString(16);
  }
  const dbl = s.indexOf('::');
  let head: string[];
  let rest: string[];
  if (dbl >= 0) {
    head = s.slice(0, dbl) === '' ? [] : s.slice(0, dbl).split(':');
    rest = s.slice(dbl + 2) === '' ? [] : s.slice(dbl + 2).split(':');
  } else {
    head = s.split(':');
    rest = [];
  }
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (dbl < 0 && missing !== 0)) return undefined;
  const all = [...head, ...new Array<string>(missing).fill('0'), ...rest];
  return all.map((g) => parseInt(g, 16));
}

function formatIpv6(g: number[]): string {
  // Longest run of zero groups (length >= 2) becomes "::" (first one on a tie).
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestLen < 2) return hex.join(':');
  return hex.slice(0, bestStart).join(':') + '::' + hex.slice(bestStart + bestLen).join(':');
}

/**
 * The client IP of a test-endpoint request: `X-Real-Ip`, then the first parsable
 * `X-Forwarded-For` entry, then the socket's remote address. `headers` is the record's header
 * map (canonical names). Returns "" when none is an IP address.
 */
export function testEndpointIp(headers: Readonly<Record<string, string>>, remoteAddress: string | undefined): string {
  const real = normalizeIp(headers['X-Real-Ip']);
  if (real !== undefined) return real;
  const forwarded = headers['X-Forwarded-For'];
  if (forwarded !== undefined) {
    for (const entry of forwarded.split(',')) {
      const ip = normalizeIp(entry);
      if (ip !== undefined) return ip;
    }
  }
  return normalizeIp(remoteAddress) ?? '';
}
