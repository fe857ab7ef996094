/**
 * What kind of address an outgoing request would reach, for the outbound address policy
 * (`outbound.ts`). Every IP address falls in one class:
 *
 * - `link-local` — link-local ranges and the cloud metadata services (169.254.0.0/16,
 *   fe80::/10, AWS `fd00:ec2::254`, GCP `fd20:ce::254`, Alibaba `100.100.100.200`, Azure's
 *   WireServer `168.63.129.16`). Never reachable through the guard: these hand out cloud
 *   credentials to whoever asks from the machine.
 * - `loopback` — 127.0.0.0/8, ::1.
 * - `unspecified` — 0.0.0.0/8 ("this network", RFC 1122 §3.2.1.3) and `::` (RFC 4291 §2.5.2):
 *   a connection to them reaches this host on Linux, like loopback. Never reachable through
 *   the guard.
 * - `private` — RFC 1918, CGNAT (RFC 6598), unique local (RFC 4193), deprecated site-local
 *   (RFC 3879), the local-use NAT64 prefix (RFC 8215).
 * - `special` — everything the IANA special-purpose registries (RFC 6890) set aside that is
 *   not one of the above: documentation, benchmarking, multicast, broadcast, reserved, and
 *   IPv6 outside 2000::/3. Never reachable through the outbound guard; they lead nowhere into
 *   this host, so the sandbox's egress filter does not count them with the above.
 * - `public` — the rest.
 *
 * IPv6 forms that carry an IPv4 address are classified by that address: IPv4-mapped
 * (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2), IPv4-compatible (`::a.b.c.d`, deprecated by the same
 * section but still routed by some stacks), IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765),
 * NAT64 (`64:ff9b::/96`, RFC 6052), 6to4 (`2002::/16`, RFC 3056) and Teredo (`2001::/32`,
 * RFC 4380, client address stored inverted). Input is an address as `net.isIP` accepts it
 * (an IPv6 zone `%eth0` and surrounding brackets are ignored). Host names that spell an IPv4
 * address in other ways (`0x7f.1`, `2130706433`, `0177.0.0.1`) are first normalized by the
 * WHATWG URL parser (`canonicalHost`), which reads them as `inet_aton` does.
 */
import { isIP } from 'node:net';

export type AddressClass = 'link-local' | 'unspecified' | 'loopback' | 'private' | 'special' | 'public';

/** Most restrictive first: when an address embeds another, the worse class wins. */
const SEVERITY: Record<AddressClass, number> = {
  'link-local': 5,
  unspecified: 4,
  special: 3,
  loopback: 2,
  private: 1,
  public: 0,
};

function worst(a: AddressClass, b: AddressClass): AddressClass {
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}

type V4Range = readonly [base: number, bits: number, cls: AddressClass];

function v4(text: string): number {
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

// First match wins: the /32 metadata entries come before the ranges that contain them.
const V4_RANGES: readonly V4Range[] = [
  [v4('169.254.0.0'), 16, 'link-local'], // RFC 3927; AWS/GCP/Azure/OCI/DO metadata at .169.254
  [v4('100.100.100.200'), 32, 'link-local'], // Alibaba Cloud metadata (inside CGNAT space)
  [v4('168.63.129.16'), 32, 'link-local'], // Azure WireServer / host agent (a "public" address)
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('0.0.0.0'), 8, 'unspecified'], // RFC 1122 "this network"; 0.0.0.0 connects to the local host
  [v4('10.0.0.0'), 8, 'private'], // RFC 1918
  [v4('172.16.0.0'), 12, 'private'], // RFC 1918
  [v4('192.168.0.0'), 16, 'private'], // RFC 1918
  [v4('100.64.0.0'), 10, 'private'], // RFC 6598 carrier-grade NAT
  [v4('192.0.0.0'), 24, 'special'], // RFC 6890 IETF protocol assignments
  [v4('192.0.2.0'), 24, 'special'], // RFC 5737 documentation
  [v4('198.51.100.0'), 24, 'special'], // RFC 5737
  [v4('203.0.113.0'), 24, 'special'], // RFC 5737
  [v4('198.18.0.0'), 15, 'special'], // RFC 2544 benchmarking
  [v4('192.88.99.0'), 24, 'special'], // RFC 7526 deprecated 6to4 relay anycast
  [v4('224.0.0.0'), 4, 'special'], // multicast
  [v4('240.0.0.0'), 4, 'special'], // RFC 1112 reserved, and the broadcast address
];

function classifyV4Number(n: number): AddressClass {
  for (const [base, bits, cls] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    if (n >= base && n < base + size) return cls;
  }
  return 'public';
}

/** Parses a valid IPv6 address (as `net.isIPv6` accepts it) into its eight 16-bit groups. */
function v6Groups(address: string): number[] {
  let text = address;
  const groups: number[] = [];
  // A trailing dotted IPv4 part stands for the last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let tail: number[] = [];
  if (dotted !== null) {
    const n = v4(dotted[1]!);
    tail = [Math.floor(n / 65536), n % 65536];
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const gap = text.indexOf('::');
  if (gap === -1) {
    groups.push(...parse(text), ...tail);
  } else {
    const head = parse(text.slice(0, gap));
    const rest = [...parse(text.slice(gap + 2)), ...tail];
    groups.push(...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest);
  }
  return groups;
}

function v4From(hi: number, lo: number): number {
  return hi * 65536 + lo;
}

function classifyV6(g: number[]): AddressClass {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const low32 = v4From(g6, g7);
  const firstSixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0;
  if (firstSixZero) {
    if (low32 === 0) return 'unspecified'; // ::
    if (low32 === 1) return 'loopback'; // ::1
    return classifyV4Number(low32); // ::a.b.c.d IPv4-compatible
  }
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff)
    return classifyV4Number(low32); // ::ffff:a.b.c.d IPv4-mapped
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0)
    return classifyV4Number(low32); // ::ffff:0:a.b.c.d IPv4-translated
  if (g0 === 0x64 && g1 === 0xff9b) {
    // 64:ff9b::/96 well-known NAT64 prefix: the translator reaches the embedded address.
    if (g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return classifyV4Number(low32);
    // 64:ff9b:1::/48 local-use prefix: a translator on the operator's own network, where
    // the IPv4 part's position depends on the prefix length; the worse of both readings.
    if (g2 === 1) return worst('private', classifyV4Number(low32));
  }
  if (g0 === 0x2002) {
    // 6to4: the IPv4 address of the tunnel end point follows the prefix.
    const embedded = classifyV4Number(v4From(g1, g2));
    return embedded === 'public' ? 'public' : embedded;
  }
  if (g0 === 0x2001 && g1 === 0) {
    // Teredo: server IPv4 in bits 32-63, client IPv4 (inverted) in the last 32 bits.
    const server = classifyV4Number(v4From(g2, g3));
    const client = classifyV4Number(v4From(g6 ^ 0xffff, g7 ^ 0xffff));
    return worst(server, client);
  }
  // Cloud metadata on IPv6 (inside fc00::/7, so before the private check).
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && low32 === 0x254)
    return 'link-local'; // AWS IMDS fd00:ec2::254
  if (g0 === 0xfd20 && g1 === 0x00ce && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && low32 === 0x254)
    return 'link-local'; // GCP metadata fd20:ce::254
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local'; // fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // fec0::/10 site-local (RFC 3879)
  if ((g0 & 0xfe00) === 0xfc00) return 'private'; // fc00::/7 unique local (RFC 4193)
  if ((g0 & 0xff00) === 0xff00) return 'special'; // multicast
  if (g0 === 0x2001 && g1 === 0x0db8) return 'special'; // RFC 3849 documentation
  if (g0 === 0x3fff && (g1 & 0xf000) === 0) return 'special'; // 3fff::/20 documentation (RFC 9637)
  if (g0 === 0x2001 && g1 < 0x0200) return 'special'; // 2001::/23 IETF protocol assignments
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return 'special'; // 100::/64 discard
  if ((g0 & 0xe000) !== 0x2000) return 'special'; // outside 2000::/3 global unicast
  return 'public';
}

/**
 * The class of an IP address. Throws `TypeError` for anything that is not an address: callers
 * classify resolved addresses and literals, never names.
 */
export function classifyAddress(address: string): AddressClass {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const family = isIP(text);
  if (family === 4) return classifyV4Number(v4(text));
  if (family === 6) return classifyV6(v6Groups(text.toLowerCase()));
  throw new TypeError(`"${address}" is not an IP address`);
}

/** True when `host` (brackets allowed) is an IP literal rather than a name. */
export function isIpLiteral(host: string): boolean {
  const text = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return isIP(text) !== 0;
}

/**
 * The host name of `host` (`name`, `name:port`, `a.b.c.d`, `[v6]:port`) as the WHATWG URL
 * parser normalizes it: lower case, IPv4 in any `inet_aton` spelling turned into dotted
 * decimal (`0x7f.1` → `127.0.0.1`), IPv6 compressed, brackets removed. Throws `TypeError`
 * when it is not a host.
 */
export function canonicalHost(host: string): string {
  if (host === '' || /[/?#@\\\s]/.test(host)) throw new TypeError(`"${host}" is not a host`);
  let url: URL;
  try {
    url = new URL(`http://${host}/`);
  } catch {
    throw new TypeError(`"${host}" is not a host`);
  }
  return url.hostname.replace(/^\[|\]$/g, '');
}
