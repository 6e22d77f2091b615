// The address policy, address by address: every IANA special-purpose block (with its edges where
// they are meaningful), every IPv6 form that embeds an IPv4 address, and public addresses that pass.
// Literals only; nothing here opens a connection.
import { expect } from "chai";
import ipaddr from "ipaddr.js";
import { classifyAddress } from "../../src/net/addressPolicy.js";

/** [address, expected range, embedded IPv4 named in the verdict]; only "unicast" is allowed. */
type Row = readonly [address: string, range: string, embeddedIPv4?: string];

const IPV4: readonly Row[] = [
  ["0.0.0.0", "unspecified"], // "This network" 0.0.0.0/8
  ["0.255.255.255", "unspecified"],
  ["1.0.0.0", "unicast"], // first address after 0.0.0.0/8
  ["9.255.255.255", "unicast"],
  ["10.0.0.0", "private"], // Private-Use 10/8
  ["10.255.255.255", "private"],
  ["11.0.0.0", "unicast"],
  ["100.63.255.255", "unicast"],
  ["100.64.0.0", "carrierGradeNat"], // Shared Address Space 100.64/10
  ["100.127.255.255", "carrierGradeNat"],
  ["100.128.0.0", "unicast"],
  ["100.100.100.200", "metadata"],
  ["127.0.0.1", "loopback"], // Loopback 127/8
  ["127.255.255.255", "loopback"],
  ["128.0.0.0", "unicast"],
  ["169.253.255.255", "unicast"],
  ["169.254.0.0", "linkLocal"], // Link Local 169.254/16
  ["169.254.169.254", "metadata"],
  ["169.254.255.255", "linkLocal"],
  ["169.255.0.0", "unicast"],
  ["172.15.255.255", "unicast"],
  ["172.16.0.0", "private"], // Private-Use 172.16/12
  ["172.31.255.255", "private"],
  ["172.32.0.0", "unicast"],
  ["192.0.0.0", "reserved"], // IETF Protocol Assignments 192.0.0.0/24, refused whole (PCP/TURN anycast included)
  ["192.0.0.9", "reserved"],
  ["192.0.0.170", "reserved"],
  ["192.0.0.255", "reserved"],
  ["192.0.1.0", "unicast"],
  ["192.0.2.1", "reserved"], // Documentation TEST-NET-1
  ["192.31.196.1", "as112"], // AS112-v4
  ["192.52.193.1", "amt"], // AMT
  ["192.88.99.1", "reserved"], // Deprecated 6to4 Relay Anycast
  ["192.167.255.255", "unicast"],
  ["192.168.0.0", "private"], // Private-Use 192.168/16
  ["192.168.255.255", "private"],
  ["192.169.0.0", "unicast"],
  ["192.175.48.1", "as112"], // Direct Delegation AS112 Service
  ["198.17.255.255", "unicast"],
  ["198.18.0.0", "reserved"], // Benchmarking 198.18/15
  ["198.19.255.255", "reserved"],
  ["198.20.0.0", "unicast"],
  ["198.51.100.1", "reserved"], // Documentation TEST-NET-2
  ["203.0.113.1", "reserved"], // Documentation TEST-NET-3
  ["223.255.255.255", "unicast"],
  ["224.0.0.1", "multicast"], // 224/4
  ["239.255.255.255", "multicast"],
  ["240.0.0.1", "reserved"], // Reserved 240/4
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"], // Limited Broadcast
  ["8.8.8.8", "unicast"],
  ["1.1.1.1", "unicast"],
  ["93.184.216.34", "unicast"],
];

const IPV6: readonly Row[] = [
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["2606:4700:4700::1111", "unicast"],
  ["2a00:1450:4001:80b::200e", "unicast"],
  ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unallocated"], // just below 2000::/3, the only global unicast allocation
  ["2000::1", "unicast"],
  ["3ffe::1", "unicast"], // end of 2000::/3 (not in a special block)
  ["4000::1", "unallocated"],
  ["::1:0:0", "unallocated"],
  ["::2", "ipv4Compatible", "0.0.0.2"], // IPv4-compatible ::/96, the reported bypass
  ["::7f00:1", "ipv4Compatible", "127.0.0.1"],
  ["::a9fe:a9fe", "ipv4Compatible", "169.254.169.254"],
  ["::808:808", "ipv4Compatible", "8.8.8.8"], // a public IPv4 inside is refused as well
  ["::ffff:ffff", "ipv4Compatible", "255.255.255.255"], // last address of ::/96
  ["::127.0.0.1", "ipv4Compatible", "127.0.0.1"], // dotted tail: compatible, not mapped as ipaddr.js would read it
  ["::8.8.8.8", "ipv4Compatible", "8.8.8.8"],
  ["::ffff:0:0", "ipv4Mapped", "0.0.0.0"], // IPv4-mapped ::ffff:0:0/96
  ["::ffff:127.0.0.1", "ipv4Mapped", "127.0.0.1"],
  ["0:0:0:0:0:ffff:169.254.169.254", "ipv4Mapped", "169.254.169.254"],
  ["::ffff:a00:1", "ipv4Mapped", "10.0.0.1"],
  ["::ffff:808:808", "ipv4Mapped", "8.8.8.8"],
  ["::ffff:ffff:ffff", "ipv4Mapped", "255.255.255.255"],
  ["::ffff:0:7f00:1", "rfc6145", "127.0.0.1"], // SIIT ::ffff:0:0:0/96
  ["::ffff:0:808:808", "rfc6145", "8.8.8.8"],
  ["::ffff:0:10.1.2.3", "rfc6145", "10.1.2.3"],
  ["64:ff9b::a9fe:a9fe", "rfc6052", "169.254.169.254"], // NAT64 well-known prefix 64:ff9b::/96
  ["64:ff9b::10.0.0.1", "rfc6052", "10.0.0.1"],
  ["64:ff9b::808:808", "rfc6052", "8.8.8.8"],
  ["64:ff9b:1::a00:1", "rfc6052"], // Local-use NAT64 64:ff9b:1::/48: the IPv4's position depends on the local prefix length
  ["64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "rfc6052"],
  ["100::1", "discard"], // Discard-Only 100::/64
  ["100::ffff:ffff:ffff:ffff", "discard"],
  ["100:0:0:1::1", "dummyPrefix"], // Dummy IPv6 Prefix 100:0:0:1::/64
  ["2001::1", "teredo", "255.255.255.254"], // Teredo 2001::/32; the client IPv4 is stored inverted
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo", "192.0.2.45"], // RFC 4380's example client
  ["2001:0:4136:e378:8000:63bf:80ff:fffe", "teredo", "127.0.0.1"],
  ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "teredo", "8.8.8.8"],
  ["2001:1::1", "reserved"], // IETF Protocol Assignments 2001::/23: PCP anycast
  ["2001:1::3", "reserved"], // DNS-SD SRP anycast
  ["2001:2::1", "benchmarking"],
  ["2001:3::1", "amt"],
  ["2001:4:112::1", "as112v6"],
  ["2001:10::1", "deprecatedOrchid"],
  ["2001:20::1", "orchid2"],
  ["2001:30::1", "droneRemoteIdProtocolEntityTags"],
  ["2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"], // last address of 2001::/23
  ["2001:200::", "unicast"], // first address after it
  ["2001:db8::1", "reserved"], // Documentation 2001:db8::/32
  ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["2001:db9::", "unicast"],
  ["2002::", "6to4", "0.0.0.0"], // 6to4 2002::/16
  ["2002:7f00:1::", "6to4", "127.0.0.1"],
  ["2002:a9fe:a9fe::", "6to4", "169.254.169.254"],
  ["2002:c0a8:101::1", "6to4", "192.168.1.1"],
  ["2002:808:808::1", "6to4", "8.8.8.8"],
  ["2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4", "255.255.255.255"],
  ["2003::", "unicast"],
  ["2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", "unicast"],
  ["2620:4f:8000::1", "as112v6"], // Direct Delegation AS112 Service 2620:4f:8000::/48
  ["2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "as112v6"],
  ["2620:4f:8001::", "unicast"],
  ["3fff::1", "reserved"], // Documentation 3fff::/20
  ["3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["3fff:1000::", "unicast"],
  ["5f00::1", "segmentRouting"], // SRv6 SIDs 5f00::/16
  ["5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "segmentRouting"],
  ["fc00::1", "uniqueLocal"], // Unique-Local fc00::/7
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "uniqueLocal"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "linkLocal"], // Link-Local Unicast fe80::/10
  ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "linkLocal"],
  ["fec0::1", "deprecatedSiteLocal"], // deprecated site-local fec0::/10
  ["ff02::1", "multicast"], // ff00::/8
  ["ff0e::1", "multicast"],
];

const NOT_ADDRESSES: readonly Row[] = [
  ["fe80::1%eth0", "invalid"], // a zone id names a local interface
  ["2606:4700:4700::1111%1", "invalid"],
  ["127.0.0.1.", "invalid"],
  ["localhost", "invalid"],
  ["", "invalid"],
];

// Every block of the IANA IPv4 and IPv6 Special-Purpose Address Registries (plus multicast, the
// deprecated site-local and IPv4-compatible blocks), written out independently of the implementation.
const IANA_BLOCKS = [
  "0.0.0.0/8",
  "0.0.0.0/32",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.0.0/29",
  "192.0.0.8/32",
  "192.0.0.9/32",
  "192.0.0.10/32",
  "192.0.0.170/32",
  "192.0.0.171/32",
  "192.0.2.0/24",
  "192.31.196.0/24",
  "192.52.193.0/24",
  "192.88.99.0/24",
  "192.88.99.2/32",
  "192.168.0.0/16",
  "192.175.48.0/24",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "255.255.255.255/32",
  "::1/128",
  "::/128",
  "::/96",
  "::ffff:0:0/96",
  "::ffff:0:0:0/96",
  "64:ff9b::/96",
  "64:ff9b:1::/48",
  "100::/64",
  "100:0:0:1::/64",
  "2001::/23",
  "2001::/32",
  "2001:1::1/128",
  "2001:1::2/128",
  "2001:1::3/128",
  "2001:2::/48",
  "2001:3::/32",
  "2001:4:112::/48",
  "2001:10::/28",
  "2001:20::/28",
  "2001:30::/28",
  "2001:db8::/32",
  "2002::/16",
  "2620:4f:8000::/48",
  "3fff::/20",
  "5f00::/16",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

function firstAndLast(cidr: string): [string, string] {
  const family = cidr.includes(":") ? ipaddr.IPv6 : ipaddr.IPv4;
  return [family.networkAddressFromCIDR(cidr).toString(), family.broadcastAddressFromCIDR(cidr).toString()];
}

describe("net: address policy", () => {
  for (const cidr of IANA_BLOCKS) {
    it(`refuses the first and last address of ${cidr}`, () => {
      for (const address of firstAndLast(cidr)) expect(classifyAddress(address).allowed, address).to.equal(false);
    });
  }

  for (const [address, range, embeddedIPv4] of [...IPV4, ...IPV6, ...NOT_ADDRESSES]) {
    const allowed = range === "unicast";
    it(`${allowed ? "allows" : "refuses"} ${address || '""'} (${range}${embeddedIPv4 ? ` carrying ${embeddedIPv4}` : ""})`, () => {
      const { address: _normalized, ...verdict } = classifyAddress(address);
      expect(verdict).to.deep.equal({ allowed, range, ...(embeddedIPv4 ? { embeddedIPv4 } : {}) });
    });
  }

  it("normalises the address it reports", () => {
    expect(classifyAddress("::127.0.0.1").address).to.equal("::7f00:1");
    expect(classifyAddress("::ffff:10.0.0.1").address).to.equal("::ffff:a00:1");
    expect(classifyAddress("0:0:0:0:0:0:0:1").address).to.equal("::1");
    expect(classifyAddress("2130706433")).to.deep.equal({ allowed: false, range: "loopback", address: "127.0.0.1" });
  });
});
