import { createHash } from 'node:crypto';

/** Rule and resource hashed: fixed length, and no separator a resource id could contain makes two collide. */
export const fingerprintOf = ({ ruleId, resourceId }: { ruleId: string; resourceId: string }): string =>
  createHash('sha256')
    .update(JSON.stringify([ruleId, resourceId]))
    .digest('hex');
