import { randomBytes } from 'node:crypto';

/** A signing secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
