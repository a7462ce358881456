import { describe, expect, it } from "vitest";
import {
  checkOutboundUrl,
  classifyAddress,
  isAddressAllowed,
  OutboundUrlError,
  parseOutboundUrl,
  type HostResolver,
} from "../../src/providers/webhook/index.js";

describe("classifyAddress", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["93.184.215.14", "public"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.10.20", "private"],
    ["100.64.0.1", "shared"],
    ["100.127.255.255", "shared"],
    ["100.128.0.1", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "link_local"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.251", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["fc00::1", "private"],
    ["fd00:ec2::254", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["2606:4700:4700::1111", "public"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:a9fe:a9fe", "link_local"],
    ["::ffff:8.8.8.8", "public"],
    ["64:ff9b::10.0.0.1", "private"],
    ["2002:7f00:1::", "loopback"],
    ["::127.0.0.1", "reserved"],
    ["1::", "reserved"],
  ])("%s is %s", (address, addressClass) => {
    expect(classifyAddress(address)).toBe(addressClass);
  });

  it("allows only public addresses, unless the operator allows private ones; never unspecified or multicast", () => {
    expect(isAddressAllowed("8.8.8.8")).toBe(true);
    expect(isAddressAllowed("10.0.0.1")).toBe(false);
    expect(isAddressAllowed("10.0.0.1", { allowPrivate: true })).toBe(true);
    expect(isAddressAllowed("::1", { allowPrivate: true })).toBe(true);
    expect(isAddressAllowed("0.0.0.0", { allowPrivate: true })).toBe(false);
    expect(isAddressAllowed("224.0.0.1", { allowPrivate: true })).toBe(false);
  });
});

describe("parseOutboundUrl", () => {
  it.each([
    ["http://hooks.example/", "https_required"],
    ["ftp://hooks.example/", "https_required"],
    ["hooks.example/path", "invalid_url"],
    ["https://", "invalid_url"],
    ["https://user:pass@hooks.example/", "credentials_in_url"],
    [`https://hooks.example/${"a".repeat(2048)}`, "invalid_url"],
  ])("refuses %s (%s)", (url, reason) => {
    expect(() => parseOutboundUrl(url)).toThrow(expect.objectContaining({ reason }));
  });

  it("accepts https URLs with ports, paths and queries, and normalises odd IPv4 spellings", () => {
    expect(parseOutboundUrl("https://hooks.example:8443/a?b=c").href).toBe("https://hooks.example:8443/a?b=c");
    expect(parseOutboundUrl("https://0x7f.1/").hostname).toBe("127.0.0.1");
  });
});

describe("checkOutboundUrl", () => {
  const resolver =
    (table: Record<string, string[]>): HostResolver =>
    async (hostname) => {
      const addresses = table[hostname];
      if (!addresses) throw new Error(`ENOTFOUND ${hostname}`);
      return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };
  const dns = resolver({
    "public.example": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "internal.example": ["10.1.2.3"],
    "mixed.example": ["93.184.215.14", "169.254.169.254"],
    "empty.example": [],
  });

  it("resolves and returns the allowed addresses", async () => {
    const { url, addresses } = await checkOutboundUrl("https://public.example/hook", { resolveHost: dns });
    expect(url.href).toBe("https://public.example/hook");
    expect(addresses).toEqual([
      { address: "93.184.215.14", family: 4 },
      { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 },
    ]);
  });

  it.each([
    ["https://internal.example/", "forbidden_address", "private"],
    ["https://mixed.example/", "forbidden_address", "link_local"],
    ["https://127.0.0.1/", "forbidden_address", "loopback"],
    ["https://[::1]:8443/", "forbidden_address", "loopback"],
    ["https://[::ffff:10.0.0.1]/", "forbidden_address", "private"],
    ["https://nowhere.example/", "unresolvable", undefined],
    ["https://empty.example/", "unresolvable", undefined],
  ])("refuses %s", async (url, reason, addressClass) => {
    const error = await checkOutboundUrl(url, { resolveHost: dns }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboundUrlError);
    expect(error).toMatchObject({ reason, addressClass });
    expect((error as Error).message).not.toMatch(/\d+\.\d+\.\d+\.\d+/);
  });

  it("allows internal destinations when the operator says so", async () => {
    await expect(checkOutboundUrl("https://internal.example/", { resolveHost: dns, allowPrivate: true })).resolves.toMatchObject({
      addresses: [{ address: "10.1.2.3", family: 4 }],
    });
  });

  it("uses the system resolver by default", async () => {
    await expect(checkOutboundUrl("https://localhost/")).rejects.toMatchObject({ reason: "forbidden_address", addressClass: "loopback" });
  });
});
