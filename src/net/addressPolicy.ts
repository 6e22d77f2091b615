// Which IP addresses outbound requests may reach. Only globally routable unicast addresses pass,
// so loopback, RFC 1918, link-local (and with it 169.254.169.254 metadata), CGNAT, unique-local,
// multicast, reserved and IPv6 forms that embed IPv4 (mapped, NAT64, 6to4, Teredo) are refused.
import ipaddr from "ipaddr.js";

export interface AddressVerdict {
  readonly allowed: boolean;
  /** ipaddr.js range name, e.g. "unicast", "private", "loopback". */
  readonly range: string;
  readonly address: string;
}

/** Extra hosts that are metadata endpoints although their range looks public. */
const METADATA_ADDRESSES = new Set<string>([
  "169.254.169.254", // AWS, GCP, Azure, OpenStack (also link-local)
  "100.100.100.200", // Alibaba Cloud (also CGNAT)
  "fd00:ec2::254", // AWS IPv6 (also unique-local)
]);

export function classifyAddress(address: string): AddressVerdict {
  if (!ipaddr.isValid(address)) return { allowed: false, range: "invalid", address };
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  const normalized = parsed.toString();
  const range = parsed.range();
  if (METADATA_ADDRESSES.has(normalized)) return { allowed: false, range: "metadata", address: normalized };
  return { allowed: range === "unicast", range, address: normalized };
}

export function isIpLiteral(host: string): boolean {
  return ipaddr.isValid(stripBrackets(host));
}

export function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
