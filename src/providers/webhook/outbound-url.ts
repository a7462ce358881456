import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { classifyAddress, isAddressAllowed, type AddressClass } from "./address-class.js";

/** Why an outbound URL was refused. */
export type OutboundUrlRefusal = "invalid_url" | "https_required" | "credentials_in_url" | "forbidden_address" | "unresolvable";

/** Thrown by the outbound URL checks; `reason` is stable, the message is fit for a 400. */
export class OutboundUrlError extends Error {
  override readonly name = "OutboundUrlError";
  readonly reason: OutboundUrlRefusal;
  /** The refused address, for the operator's logs (kept out of the message). */
  readonly address?: string;
  readonly addressClass?: AddressClass;

  constructor(reason: OutboundUrlRefusal, message: string, details: { address?: string; addressClass?: AddressClass; cause?: unknown } = {}) {
    super(message, { cause: details.cause });
    this.reason = reason;
    this.address = details.address;
    this.addressClass = details.addressClass;
  }
}

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has; injectable so tests can play a rebinding DNS. */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** Options for the address checks. */
export interface OutboundAddressOptions {
  /** Operator switch: private, loopback, link-local and other internal destinations are allowed. */
  allowPrivate?: boolean;
  /** Default: the system resolver (`dns.lookup`, all addresses). */
  resolveHost?: HostResolver;
}

/** Longest URL accepted as a destination. */
const maxUrlLength = 2048;

const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/** The host of a URL as a resolver or socket wants it: IPv6 literals without brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/**
 * Checks the syntax of a destination URL: absolute, `https:`, no user
 * information (it would travel as credentials), at most 2048 characters.
 * Synchronous, so the core can refuse a bad `callback_url` with no I/O.
 */
export function parseOutboundUrl(text: string): URL {
  if (text.length > maxUrlLength) throw new OutboundUrlError("invalid_url", `The URL is longer than ${maxUrlLength} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new OutboundUrlError("invalid_url", "The URL is not a valid absolute URL.", { cause: error });
  }
  if (url.protocol !== "https:") throw new OutboundUrlError("https_required", "The URL must use https.");
  if (url.username || url.password) throw new OutboundUrlError("credentials_in_url", "The URL must not contain credentials.");
  if (!url.hostname) throw new OutboundUrlError("invalid_url", "The URL has no host.");
  return url;
}

function refuse(address: string): OutboundUrlError {
  const addressClass = classifyAddress(address);
  return new OutboundUrlError("forbidden_address", `The destination resolves to a non-public address (${addressClass.replace("_", "-")}), which is not allowed.`, {
    address,
    addressClass,
  });
}

/**
 * Refuses a destination whose host is written as an address outside the
 * allowed classes; a host name is left to {@link resolveAllowedAddresses} at
 * connect time, since DNS may answer differently then. Synchronous, so the
 * core can refuse at submit with no I/O.
 */
export function checkAddressLiteral(url: URL, options: Pick<OutboundAddressOptions, "allowPrivate"> = {}): void {
  const host = hostOf(url);
  if (isIP(host) !== 0 && !isAddressAllowed(host, options)) throw refuse(host);
}

/**
 * Resolves a host and returns its addresses only if every one is allowed: a
 * name that mixes public and internal answers is refused whole, since the
 * connection could pick either. IP literals are checked without DNS.
 */
export async function resolveAllowedAddresses(hostname: string, options: OutboundAddressOptions = {}): Promise<ResolvedAddress[]> {
  const literal = isIP(hostname);
  let addresses: readonly ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (options.resolveHost ?? systemResolver)(hostname);
    } catch (error) {
      throw new OutboundUrlError("unresolvable", "The destination host name does not resolve.", { cause: error });
    }
  }
  if (addresses.length === 0) throw new OutboundUrlError("unresolvable", "The destination host name does not resolve.");
  const forbidden = addresses.find(({ address }) => !isAddressAllowed(address, options));
  if (forbidden) throw refuse(forbidden.address);
  return [...addresses];
}

/**
 * Checks a destination URL at submit time: syntax (see
 * {@link parseOutboundUrl}) and then where its host resolves now. Delivery
 * checks again at connect time, because DNS may answer differently later.
 */
export async function checkOutboundUrl(text: string, options: OutboundAddressOptions = {}): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const url = parseOutboundUrl(text);
  return { url, addresses: await resolveAllowedAddresses(hostOf(url), options) };
}
