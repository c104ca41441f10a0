import type { Db, Queryable } from '@costgov/db';
import { checkIfMatch } from './render';

/**
 * PUT and PATCH of a SCIM resource: in one transaction, lock the current version, honour If-Match,
 * compute the next document, save it unless it stores what is already stored; then render the result.
 * Shared by users and groups.
 */
export function versionedWrites<Doc, Stored extends Doc & { version: number }>(deps: {
  db: Db;
  kind: 'user' | 'group';
  find: (tx: Queryable, teamId: string, id: string, lock: boolean) => Promise<Stored>;
  save: (tx: Queryable, teamId: string, id: string, next: Doc, previous: Stored) => Promise<Stored>;
  /** True when saving `next` would store exactly what `current` holds. */
  sameAs: (current: Stored, next: Doc) => boolean;
  render: (stored: Stored, baseUrl: string, teamId: string) => Promise<Record<string, unknown>>;
  /** A whole resource of a PUT. */
  read: (body: unknown) => Doc;
  /** A PatchOp applied to the current document, checked. */
  patch: (current: Stored, body: unknown) => Doc;
}) {
  async function write(
    teamId: string,
    id: string,
    baseUrl: string,
    ifMatch: string | undefined,
    next: (current: Stored) => Doc,
  ) {
    const stored = await deps.db.transaction(async (tx) => {
      const current = await deps.find(tx, teamId, id, true);
      checkIfMatch(deps.kind, current.version, ifMatch);
      const doc = next(current);
      // Identity providers resend unchanged resources on every sync: such a write keeps the version and
      // lastModified and publishes nothing, so that subscribers hear of real changes only.
      return deps.sameAs(current, doc) ? current : deps.save(tx, teamId, id, doc, current);
    });
    return deps.render(stored, baseUrl, teamId);
  }

  return {
    replace(teamId: string, id: string, body: unknown, baseUrl: string, ifMatch?: string) {
      const doc = deps.read(body); // a malformed body is refused before anything is locked
      return write(teamId, id, baseUrl, ifMatch, () => doc);
    },
    patch(teamId: string, id: string, body: unknown, baseUrl: string, ifMatch?: string) {
      return write(teamId, id, baseUrl, ifMatch, (current) => deps.patch(current, body));
    },
  };
}
