import ipaddr from 'ipaddr.js';

/** Which targets outbound deliveries may reach: the SSRF guard, and what the operator lifted of it. */
export interface AddressPolicy {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: every address is allowed but cloud metadata. */
  allowPrivateNetworks: boolean;
  /**
   * WEBHOOK_ALLOWED_HOSTS: host names (lower case) or IP literals exempt from the guard. A listed IP
   * literal opens even a cloud metadata address; a listed name never reaches one.
   */
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
  const metadata = metadataAddressProblem(address);
  if (metadata) return metadata;
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

/**
 * Cloud metadata services hand out the instance's credentials, and a delivery's answer is shown to the
 * team, so no setting but an operator writing the address itself opens them. They live on IPv4
 * link-local (AWS, Azure, GCP, Oracle, OpenStack at 169.254.169.254; ECS at 169.254.170.2; Tencent at
 * 169.254.0.23), at Alibaba's 100.100.100.200, and on these IPv6 addresses: AWS fd00:ec2::254, GCP
 * fd20:ce::254, Oracle fd00:c1::a9fe:a9fe. IPv6 link-local (fe80::/10) is refused with them: nothing
 * routable lives there.
 */
const metadataAddresses = ['100.100.100.200', 'fd00:ec2::254', 'fd20:ce::254', 'fd00:c1::a9fe:a9fe'].map(
  (address) => ipaddr.parse(address).toNormalizedString(),
);

/** GCP's name for its metadata server; refused at create time too, where names are not resolved. */
const metadataHosts = ['metadata.google.internal'];

/** IPv6 forms that carry an IPv4 address in their last 32 bits (IPv4-compatible, NAT64 well-known prefix). */
const ipv4Carriers = [ipv4Compatible, ipaddr.IPv6.parseCIDR('64:ff9b::/96')];
const sixToFour = ipaddr.IPv6.parseCIDR('2002::/16');

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if it carries one. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const bytes = address.toByteArray();
  if (ipv4Carriers.some((range) => address.match(range))) return new ipaddr.IPv4(bytes.slice(12, 16));
  if (address.match(sixToFour)) return new ipaddr.IPv4(bytes.slice(2, 6));
  return undefined;
}

/** Why `address` is a cloud metadata address (in any IPv6 form of its IPv4 address), or undefined. */
export function metadataAddressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const parsed = ipaddr.parse(address);
  const forms = parsed.kind() === 'ipv6' ? [parsed, embeddedIPv4(parsed as ipaddr.IPv6)] : [parsed];
  for (const form of forms) {
    if (!form) continue;
    if (form.range() === 'linkLocal')
      return `address ${form.toString()} is link-local, where cloud metadata services live; refused`;
    if (metadataAddresses.includes(form.toNormalizedString()))
      return `address ${form.toString()} is a cloud metadata service; refused`;
  }
  return undefined;
}

/**
 * Why `host` (a URL's host or a connection's address) is cloud metadata and stays refused under
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS, or undefined. Only an IP literal listed in WEBHOOK_ALLOWED_HOSTS
 * lifts it: an operator who writes the address has chosen it, while a listed name whose DNS changes
 * must not lead there.
 */
export function metadataProblem(policy: AddressPolicy, hostname: string): string | undefined {
  const host = bareHost(hostname);
  if (ipaddr.isValid(host)) {
    return policy.allowedHosts.includes(host) ? undefined : metadataAddressProblem(host);
  }
  const name = host.replace(/\.$/, '');
  return metadataHosts.includes(name) ? `host ${name} is a cloud metadata service; refused` : undefined;
}

export const hostExempt = (policy: AddressPolicy, host: string): boolean =>
  policy.allowPrivateNetworks || policy.allowedHosts.includes(bareHost(host));

/**
 * What can be told from the URL alone, at create and update time and before each attempt: cloud
 * metadata (whatever the policy), an IP-literal host that is not public, or `localhost` (and
 * `*.localhost`, which resolvers send to loopback). Host names are checked again on every attempt, on
 * the address they resolve to.
 */
export function hostProblem(policy: AddressPolicy, hostname: string): string | undefined {
  const host = bareHost(hostname);
  const metadata = metadataProblem(policy, host);
  if (metadata) return metadata;
  if (hostExempt(policy, host)) return undefined;
  if (host === 'localhost' || host.endsWith('.localhost')) return `host ${host} is loopback; refused`;
  if (ipaddr.isValid(host)) return addressProblem(host);
  return undefined;
}
