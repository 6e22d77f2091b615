// Which IP addresses outbound requests may reach. Only globally routable unicast addresses pass:
// every block of the IANA IPv4 and IPv6 Special-Purpose Address Registries is refused (loopback,
// RFC 1918, link-local with 169.254.169.254 metadata, CGNAT, documentation, benchmarking, AS112,
// unique-local, ...), so are multicast, reserved space and every IPv6 range that embeds an IPv4
// address (mapped, compatible, SIIT, NAT64, 6to4, Teredo) whatever IPv4 it carries, because the
// host or a translator on the path would deliver the packet to that IPv4 address.
import net from "node:net";
import ipaddr from "ipaddr.js";

export interface AddressVerdict {
  readonly allowed: boolean;
  /** ipaddr.js range name ("unicast", "private", "loopback", "teredo", ...), an EXTRA_RANGES name, "metadata" or "invalid". */
  readonly range: string;
  readonly address: string;
  /** The IPv4 address an IPv6 transition form carries (for Teredo, the client's), when it can be read off the address. */
  readonly embeddedIPv4?: string;
}

/** Extra hosts that are metadata endpoints although their range looks public. */
const METADATA_ADDRESSES = new Set<string>([
  "169.254.169.254", // AWS, GCP, Azure, OpenStack (also link-local)
  "100.100.100.200", // Alibaba Cloud (also CGNAT)
  "fd00:ec2::254", // AWS IPv6 (also unique-local)
]);

// Blocks ipaddr.js 2.5 still calls "unicast"; its own tables cover every other IANA entry.
const EXTRA_RANGES: readonly (readonly [range: string, cidr: [ipaddr.IPv4 | ipaddr.IPv6, number]])[] = [
  ["ipv4Compatible", ipaddr.parseCIDR("::/96")], // IANA IPv6 Address Space ::/8 "Reserved by IETF": deprecated IPv4-compatible addresses (RFC 4291)
  ["dummyPrefix", ipaddr.parseCIDR("100:0:0:1::/64")], // IANA IPv6 Special-Purpose "Dummy IPv6 Prefix" (RFC 9780)
];

// IANA has allocated only 2000::/3 as global unicast; ipaddr.js calls the unallocated rest "unicast" too.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/** Ranges whose addresses carry an IPv4 address; refused whole, the IPv4 is named when it can be read. */
const EMBEDDING_RANGES = new Set(["ipv4Mapped", "ipv4Compatible", "rfc6145", "rfc6052", "6to4", "teredo"]);

// Only the well-known NAT64 prefix fixes where the IPv4 sits; 64:ff9b:1::/48 may use any RFC 6052 layout.
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");

export function classifyAddress(address: string): AddressVerdict {
  const text = dottedTailToHex(address);
  if (!ipaddr.isValid(text)) return { allowed: false, range: "invalid", address };
  const parsed = ipaddr.parse(text);
  // A zone id names a local interface, never a remote host.
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).zoneId) return { allowed: false, range: "invalid", address };
  const normalized = parsed.toString();
  if (METADATA_ADDRESSES.has(normalized)) return { allowed: false, range: "metadata", address: normalized };
  let range: string = parsed.range();
  if (range === "unicast") {
    range = EXTRA_RANGES.find(([, cidr]) => parsed.kind() === cidr[0].kind() && parsed.match(cidr))?.[0] ?? range;
    if (range === "unicast" && parsed.kind() === "ipv6" && !parsed.match(GLOBAL_UNICAST_V6)) range = "unallocated";
  }
  if (EMBEDDING_RANGES.has(range)) {
    const embedded = embeddedIPv4(parsed as ipaddr.IPv6, range);
    return { allowed: false, range, address: normalized, ...(embedded ? { embeddedIPv4: embedded } : {}) };
  }
  return { allowed: range === "unicast", range, address: normalized };
}

/**
 * Rewrites an IPv6 literal's dotted-quad tail as two hex groups. ipaddr.js reads "::a.b.c.d" as
 * ::ffff:a.b.c.d, while RFC 4291, inet_pton (so Node's sockets) and the URL parser read it as
 * ::a.b.c.d; this keeps the checked address the one a socket would reach.
 */
function dottedTailToHex(address: string): string {
  const match = /^(.*:)(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(%.*)?$/.exec(address);
  if (!match) return address;
  const [a, b, c, d] = match.slice(2, 6).map(Number) as [number, number, number, number];
  if (a > 255 || b > 255 || c > 255 || d > 255) return address;
  return `${match[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}${match[6] ?? ""}`;
}

/** The IPv4 address inside an address of an embedding range, where its layout is fixed. */
function embeddedIPv4(address: ipaddr.IPv6, range: string): string | undefined {
  const [, p1 = 0, p2 = 0, , , , p6 = 0, p7 = 0] = address.parts;
  const fromWords = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]).toString();
  switch (range) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "ipv4Compatible": // ::a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d
      return fromWords(p6, p7);
    case "rfc6052": // 64:ff9b::a.b.c.d
      return address.match(NAT64_WELL_KNOWN) ? fromWords(p6, p7) : undefined;
    case "6to4": // 2002:aabb:ccdd::/48
      return fromWords(p1, p2);
    case "teredo": // 2001:0:server:server:flags:port:client:client, client bits inverted (RFC 4380)
      return fromWords(~p6 & 0xffff, ~p7 & 0xffff);
    default:
      return undefined;
  }
}

/**
 * Whether `host` is an IP literal. It asks Node's own `net.isIP`, the test `net.connect` uses to skip
 * the DNS lookup, so every host the socket would reach directly is classified as a literal here.
 */
export function isIpLiteral(host: string): boolean {
  return net.isIP(stripBrackets(host)) !== 0;
}

export function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
