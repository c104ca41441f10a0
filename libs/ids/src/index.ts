import { randomUUID } from 'node:crypto';
import { typeid } from 'typeid-js';

/** Prefixes of the public identifiers (TypeIDs: prefix + UUIDv7 in base32, so ids sort by creation). */
export const idPrefixes = {
  team: 'team',
  apiKey: 'key',
  scimToken: 'sct',
  project: 'prj',
  budget: 'bdg',
  violation: 'vio',
  scan: 'scn',
  finding: 'fnd',
  connection: 'con',
  event: 'evt',
  webhook: 'whk',
  /** A webhook delivery: its id is the `webhook-id` header (Standard Webhooks' `msg_` ids). */
  webhookMessage: 'msg',
} as const;

export type IdKind = keyof typeof idPrefixes;

export type IdGenerator = (kind: IdKind) => string;

export const newId: IdGenerator = (kind) => typeid(idPrefixes[kind]).toString();

/** SCIM resources use plain UUIDs, as identity providers expect. */
export const newUuid = (): string => randomUUID();

/** True when `id` has the shape of an id of this kind; lets callers answer 404 without a lookup. */
export function looksLikeId(kind: IdKind, id: string): boolean {
  return new RegExp(`^${idPrefixes[kind]}_[0-7][0-9a-hjkmnp-tv-z]{25}$`).test(id);
}
