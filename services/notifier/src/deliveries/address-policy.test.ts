import { describe, expect, it } from 'vitest';
import { addressProblem, hostProblem, type AddressPolicy } from './address-policy';

const strict: AddressPolicy = { allowPrivateNetworks: false, allowedHosts: [] };
const privateNetworks: AddressPolicy = { allowPrivateNetworks: true, allowedHosts: [] };

/** Cloud metadata, as a URL host: refused whatever WEBHOOK_ALLOW_PRIVATE_NETWORKS says. */
const metadataHosts: Array<[string, string, string]> = [
  ['AWS, Azure, GCP, Oracle IMDS', '169.254.169.254', 'address 169.254.169.254 is link-local'],
  ['AWS ECS task metadata', '169.254.170.2', 'address 169.254.170.2 is link-local'],
  ['any IPv4 link-local address', '169.254.0.1', 'address 169.254.0.1 is link-local'],
  ['AWS IMDS over IPv6', '[fd00:ec2::254]', 'address fd00:ec2::254 is a cloud metadata service'],
  ['AWS IMDS over IPv6, spelt long', '[fd00:ec2:0:0:0:0:0:254]', 'address fd00:ec2::254 is a cloud'],
  ['GCP metadata over IPv6', '[fd20:ce::254]', 'address fd20:ce::254 is a cloud metadata service'],
  ['Oracle IMDS over IPv6', '[fd00:c1::a9fe:a9fe]', 'address fd00:c1::a9fe:a9fe is a cloud metadata'],
  ['IPv6 link-local', '[fe80::1]', 'address fe80::1 is link-local'],
  ['IPv6 link-local, top of fe80::/10', '[febf::1]', 'address febf::1 is link-local'],
  ['Alibaba metadata', '100.100.100.200', 'address 100.100.100.200 is a cloud metadata service'],
  ['GCP metadata by name', 'metadata.google.internal', 'host metadata.google.internal is a cloud metadata'],
  ['GCP metadata by name, upper case', 'METADATA.Google.Internal', 'host metadata.google.internal is'],
  ['GCP metadata by name, absolute', 'metadata.google.internal.', 'host metadata.google.internal is'],
  ['IPv4-mapped IMDS', '[::ffff:169.254.169.254]', 'address 169.254.169.254 is link-local'],
  ['IPv4-mapped IMDS, hex', '[::ffff:a9fe:a9fe]', 'address 169.254.169.254 is link-local'],
  ['IPv4-mapped Alibaba', '[::ffff:100.100.100.200]', 'address 100.100.100.200 is a cloud metadata'],
  ['IPv4-compatible IMDS', '[::169.254.169.254]', 'address 169.254.169.254 is link-local'],
  ['NAT64 IMDS', '[64:ff9b::169.254.169.254]', 'address 169.254.169.254 is link-local'],
  ['6to4 IMDS', '[2002:a9fe:a9fe::1]', 'address 169.254.169.254 is link-local'],
];

describe.each([
  ['private networks are allowed', privateNetworks],
  ['the guard is on', strict],
  [
    'a host name is on the allow-list',
    { allowPrivateNetworks: true, allowedHosts: ['metadata.google.internal'] },
  ],
])('cloud metadata hosts, when %s', (_, policy) => {
  it.each(metadataHosts)('refuses %s (%s)', (_, host, reason) => {
    const problem = hostProblem(policy, host);
    expect(problem).toContain(reason);
    expect(problem).toMatch(/; refused$/);
  });
});

describe('what lifts the metadata guard', () => {
  it.each([
    ['IMDS', '169.254.169.254'],
    ['a link-local receiver', '169.254.10.5'],
    ['AWS IMDS over IPv6', 'fd00:ec2::254'],
    ['Alibaba metadata', '100.100.100.200'],
  ])('lets through %s when its address itself is on the allow-list', (_, address) => {
    const listed: AddressPolicy = { allowPrivateNetworks: false, allowedHosts: [address] };
    expect(hostProblem(listed, address.includes(':') ? `[${address}]` : address)).toBeUndefined();
  });

  it.each([
    ['a private address', '10.0.0.1'],
    ['loopback', '127.0.0.1'],
    ['unique-local', '[fd00::1]'],
    ['a unique-local address near AWS IMDS', '[fd00:ec2::253]'],
    ['carrier-grade NAT', '100.64.0.1'],
    ['localhost', 'localhost'],
    ['a name', 'hooks.internal'],
    ['a name that merely mentions metadata', 'metadata.google.internal.example.com'],
  ])('still lets through %s when private networks are allowed', (_, host) => {
    expect(hostProblem(privateNetworks, host)).toBeUndefined();
  });
});

describe('resolved addresses', () => {
  it.each([
    ['169.254.169.254', 'address 169.254.169.254 is link-local, where cloud metadata services live; refused'],
    [
      '::ffff:169.254.169.254',
      'address 169.254.169.254 is link-local, where cloud metadata services live; refused',
    ],
    ['fd00:ec2::254', 'address fd00:ec2::254 is a cloud metadata service; refused'],
    ['100.100.100.200', 'address 100.100.100.200 is a cloud metadata service; refused'],
    ['fe80::1', 'address fe80::1 is link-local, where cloud metadata services live; refused'],
    ['100.64.0.1', 'address 100.64.0.1 is carrier-grade NAT (shared); refused'],
    ['93.184.216.34', undefined],
  ])('judges %s', (address, problem) => {
    expect(addressProblem(address)).toBe(problem);
  });
});
