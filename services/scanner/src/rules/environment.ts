/** Tag keys that name a resource's environment, spelled as teams spell them. */
const environmentKeys = new Set(['env', 'environment', 'stage', 'tier']);

/** Environment values that mean "not production". */
const nonProduction = new Set([
  'dev',
  'development',
  'test',
  'testing',
  'qa',
  'staging',
  'stage',
  'stg',
  'sandbox',
  'sbx',
  'uat',
  'nonprod',
  'non-prod',
  'demo',
  'lab',
]);

/** The resource's environment tag value, lower case, or undefined when it has none. */
export function environmentOf(tags: Record<string, string>): string | undefined {
  for (const [key, value] of Object.entries(tags)) {
    if (environmentKeys.has(key.trim().toLowerCase()) && value.trim() !== '')
      return value.trim().toLowerCase();
  }
  return undefined;
}

export const isNonProduction = (environment: string | undefined): boolean =>
  environment !== undefined && nonProduction.has(environment);
