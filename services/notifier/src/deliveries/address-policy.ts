import ipaddr from 'ipaddr.js';

/** Which targets outbound deliveries may reach: the SSRF guard, and what the operator lifted of it. */
export interface AddressPolicy {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: every address is allowed. */
  allowPrivateNetworks: boolean;
  /** WEBHOOK_ALLOWED_HOSTS: host names (lower case) or IP literals exempt from the guard. */
  allowedHosts: readonly string[];
}

/** Host of a URL without IPv6 brackets, lower case. */
export const bareHost = (hostname: string): string => hostname.replace(/^\[|\]$/g, '').toLowerCase();

/**
 * Why connecting to `address` is refused, or undefined when it is a public unicast address. Only
 * ipaddr.js's `unicast` range is public: private, loopback, link-local, unique-local, carrier-grade NAT,
 * multicast, unspecified, broadcast and the reserved and translation ranges (6to4, Teredo, NAT64, which
 * can embed a private IPv4) are refused. An IPv4-mapped IPv6 address is judged as its IPv4 address.
 * IPv4-compatible IPv6 (`::/96`, deprecated by RFC 4291, e.g. `::7f00:1` for `::127.0.0.1`), which
 * ipaddr.js classes as unicast although some stacks route it to the embedded IPv4, is refused outright.
 */
export function addressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return `address ${address} is not an IP address; refused`;
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range === 'unicast') {
    if (parsed.kind() === 'ipv6' && parsed.match(ipv4Compatible)) {
      return `address ${parsed.toString()} is IPv4-compatible IPv6 (::/96); refused`;
    }
    return undefined;
  }
  return `address ${parsed.toString()} is ${rangeNames[range] ?? range}; refused`;
}

const ipv4Compatible = ipaddr.IPv6.parseCIDR('::/96');

const rangeNames: Record<string, string> = {
  private: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  carrierGradeNat: 'carrier-grade NAT (shared)',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved',
};

export const hostExempt = (policy: AddressPolicy, host: string): boolean =>
  policy.allowPrivateNetworks || policy.allowedHosts.includes(bareHost(host));

/**
 * What can be told from the URL alone, at create and update time: an IP-literal host that is not
 * public, or `localhost` (and `*.localhost`, which resolvers send to loopback). Host names are checked
 * again on every attempt, on the address they resolve to.
 */
export function hostProblem(policy: AddressPolicy, hostname: string): string | undefined {
  const host = bareHost(hostname);
  if (hostExempt(policy, host)) return undefined;
  if (host === 'localhost' || host.endsWith('.localhost')) return `host ${host} is loopback; refused`;
  if (ipaddr.isValid(host)) return addressProblem(host);
  return undefined;
}
