import { charLength, textProblem, Violations } from '@costgov/errors';
import { patternProblem } from '../events/catalogue';
import { hostProblem, type AddressPolicy } from '../deliveries/address-policy';

export const maxUrlLength = 2048;
export const maxDescriptionLength = 500;
export const maxPatterns = 50;
/** Longest overlap a rotation may ask for: 30 days. */
export const maxPreviousSecretTtlSeconds = 30 * 24 * 3600;
export const defaultPreviousSecretTtlSeconds = 24 * 3600;

/** Why `url` cannot be a webhook target, or undefined (the host is checked against the SSRF guard). */
export function urlProblem(url: string, policy: AddressPolicy): string | undefined {
  const text = textProblem(url);
  if (text) return text;
  if (url.length === 0) return 'is required';
  if (url.length > maxUrlLength) return `must be at most ${maxUrlLength} characters`;
  if (/\s/.test(url)) return 'must not contain spaces or line breaks (percent-encode them)';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `must be an http or https URL, not ${parsed.protocol.slice(0, -1)}`;
  if (parsed.username || parsed.password) return 'must not contain credentials (user:password@)';
  if (!parsed.hostname) return 'must name a host';
  return hostProblem(policy, parsed.hostname);
}

/** The patterns as stored: duplicates removed, order kept. */
export function checkEvents(violations: Violations, events: readonly string[]): string[] {
  if (events.length < 1 || events.length > maxPatterns) {
    violations.add('events', `must hold 1 to ${maxPatterns} event types or wildcards`);
    return [];
  }
  events.forEach((pattern, i) => {
    const problem = textProblem(pattern) ?? patternProblem(pattern);
    if (problem) violations.add(`events[${i}]`, problem);
  });
  return [...new Set(events)];
}

export function checkDescription(violations: Violations, description: string): void {
  const problem = textProblem(description);
  if (problem) violations.add('description', problem);
  else
    violations.check(
      charLength(description) <= maxDescriptionLength,
      'description',
      `must be at most ${maxDescriptionLength} characters`,
    );
}

export function checkUrl(violations: Violations, url: string, policy: AddressPolicy): void {
  const problem = urlProblem(url, policy);
  if (problem) violations.add('url', problem);
}
