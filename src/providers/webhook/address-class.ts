import { isIP } from "node:net";

/**
 * What kind of destination an IP address is. Only `public` is reachable by
 * default; everything else is somebody's internal network, this host, or
 * not a real destination at all.
 */
export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link_local"
  | "multicast"
  | "documentation"
  | "benchmarking"
  | "reserved";

/** Options for {@link isAddressAllowed}. */
export interface AddressPolicy {
  /** Operator switch: also allow private, loopback, link-local and other non-public unicast addresses. */
  allowPrivate?: boolean;
}

interface Range {
  prefix: Uint8Array;
  bits: number;
  addressClass: AddressClass;
}

const ipv4Ranges: Array<[string, AddressClass]> = [
  ["0.0.0.0/8", "unspecified"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "shared"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link_local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "reserved"],
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "reserved"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
];

/** IPv6 ranges other than those embedding an IPv4 address, which are classified by that address. */
const ipv6Ranges: Array<[string, AddressClass]> = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["::/96", "reserved"],
  ["64:ff9b:1::/48", "private"],
  ["100::/64", "reserved"],
  ["2001:2::/48", "benchmarking"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
  ["fc00::/7", "private"],
  ["fe80::/10", "link_local"],
  ["fec0::/10", "reserved"],
  ["ff00::/8", "multicast"],
];

function ipv4Bytes(address: string): Uint8Array {
  return Uint8Array.from(address.split(".").map(Number));
}

/** Expands any valid IPv6 text (zone id, `::`, trailing dotted quad) to 16 bytes. */
function ipv6Bytes(address: string): Uint8Array {
  let text = address.split("%")[0];
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".", lastColon)) {
    const [a, b, c, d] = ipv4Bytes(text.slice(lastColon + 1));
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [headText, tailText] = text.includes("::") ? text.split("::") : [text, undefined];
  const head = headText ? headText.split(":") : [];
  const tail = tailText ? tailText.split(":") : [];
  const groups = [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

function parseRanges(ranges: Array<[string, AddressClass]>, toBytes: (address: string) => Uint8Array): Range[] {
  return ranges.map(([cidr, addressClass]) => {
    const [address, bits] = cidr.split("/");
    return { prefix: toBytes(address), bits: Number(bits), addressClass };
  });
}

const ipv4Table = parseRanges(ipv4Ranges, ipv4Bytes);
const ipv6Table = parseRanges(ipv6Ranges, ipv6Bytes);

function inRange(bytes: Uint8Array, range: Range): boolean {
  for (let bit = 0; bit < range.bits; bit += 8) {
    const mask = range.bits - bit >= 8 ? 0xff : (0xff << (8 - (range.bits - bit))) & 0xff;
    if ((bytes[bit / 8] & mask) !== (range.prefix[bit / 8] & mask)) return false;
  }
  return true;
}

function classifyIpv4(bytes: Uint8Array): AddressClass {
  return ipv4Table.find((range) => inRange(bytes, range))?.addressClass ?? "public";
}

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((byte, i) => bytes[i] === byte);
}

/** The IPv4 address carried by an IPv4-mapped, NAT64 or 6to4 address, if any. */
function embeddedIpv4(bytes: Uint8Array): Uint8Array | undefined {
  if (startsWith(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return bytes.subarray(12);
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return bytes.subarray(12);
  if (startsWith(bytes, [0x20, 0x02])) return bytes.subarray(2, 6);
  return undefined;
}

function classifyIpv6(bytes: Uint8Array): AddressClass {
  const ipv4 = embeddedIpv4(bytes);
  if (ipv4) return classifyIpv4(ipv4);
  const listed = ipv6Table.find((range) => inRange(bytes, range))?.addressClass;
  if (listed) return listed;
  return (bytes[0] & 0xe0) === 0x20 ? "public" : "reserved";
}

/**
 * Classifies an IP address (IPv4, or IPv6 with IPv4-mapped, NAT64 and 6to4
 * forms classified by the IPv4 address they carry), so outbound requests can
 * refuse internal destinations however they are spelled.
 */
export function classifyAddress(address: string): AddressClass {
  const family = isIP(address.split("%")[0]);
  if (family === 4) return classifyIpv4(ipv4Bytes(address));
  if (family === 6) return classifyIpv6(ipv6Bytes(address));
  throw new TypeError(`Not an IP address: ${address}`);
}

/**
 * Whether an outbound request may connect to `address`. `allowPrivate` opens
 * every unicast class; the unspecified address (which reaches this host) and
 * multicast stay closed because no webhook receiver lives there.
 */
export function isAddressAllowed(address: string, policy: AddressPolicy = {}): boolean {
  const addressClass = classifyAddress(address);
  if (addressClass === "public") return true;
  if (addressClass === "unspecified" || addressClass === "multicast") return false;
  return policy.allowPrivate === true;
}
