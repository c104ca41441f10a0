/**
 * Event type patterns follow NATS subject wildcards: `*` matches one token, `>` (last only) matches
 * one or more. The first token must be literal: it names the producing service and so the stream.
 */
export function assertTypePattern(pattern: string): void {
  const tokens = pattern.split('.');
  const valid =
    tokens.length >= 2 &&
    /^[a-z0-9_-]+$/.test(tokens[0] ?? '') &&
    tokens.every(
      (token, i) =>
        /^[a-z0-9_-]+$/.test(token) || token === '*' || (token === '>' && i === tokens.length - 1),
    );
  if (!valid) {
    throw new Error(
      `Invalid event type pattern '${pattern}': expected a literal service token then tokens, '*' or a final '>' (e.g. 'budgets.project.*').`,
    );
  }
}

export function typeMatches(pattern: string, type: string): boolean {
  const want = pattern.split('.');
  const got = type.split('.');
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '>') return got.length > i;
    if (i >= got.length || (want[i] !== '*' && want[i] !== got[i])) return false;
  }
  return want.length === got.length;
}

export const matchesAny = (patterns: string[], type: string): boolean =>
  patterns.some((pattern) => typeMatches(pattern, type));
