import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const apiKeyPrefix = 'cg_live_';
export const scimTokenPrefix = 'cg_scim_';

/** A new secret: the prefix and 40 characters of base62 (about 238 bits). */
export function newSecret(prefix: string): string {
  return prefix + base62(40);
}

function base62(length: number): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += alphabet[byte % 62];
    }
  }
  return out;
}

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Compares two hex digests in constant time. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** What a key list may show of a secret: enough to recognise it, far too little to use it. */
export const displayPrefix = (secret: string): string => secret.slice(0, 12);
