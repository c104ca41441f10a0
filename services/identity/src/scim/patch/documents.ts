/** The documents the PATCH engine works on, and the schema URNs they are read and rendered under. */

export const patchOpSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const coreUserSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const coreGroupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const enterpriseUserSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** An element of a multi-valued complex attribute (RFC 7643 §2.4); `display` is derived, not stored. */
export interface ScimMultiValue {
  value: string;
  type?: string;
  primary?: boolean;
}
export type ScimEmail = ScimMultiValue;
export type ScimPhoneNumber = ScimMultiValue;

/**
 * The multi-valued complex User attributes, all of {value, type, primary}, each kept in a jsonb column of
 * its own: they are read, patched, filtered, stored and rendered by the same code.
 */
export const multiValuedUserAttributes = Object.freeze([
  { attribute: 'emails', noun: 'email', column: 'emails' },
  { attribute: 'phoneNumbers', noun: 'phone number', column: 'phone_numbers' },
] as const);
export type MultiValuedUserAttribute = (typeof multiValuedUserAttributes)[number];

export interface ScimName {
  formatted?: string;
  familyName?: string;
  givenName?: string;
  middleName?: string;
  honorificPrefix?: string;
  honorificSuffix?: string;
}

/** The sub-attributes of `name`, by lower-case name (paths and keys match regardless of case). */
export const nameFields: ReadonlyMap<string, keyof ScimName> = new Map(
  (['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'] as const).map(
    (field) => [field.toLowerCase(), field],
  ),
);

export interface UserDoc {
  userName: string;
  externalId?: string;
  /** Every sub-attribute of RFC 7643 §4.1.1. */
  name: ScimName;
  displayName?: string;
  emails: ScimEmail[];
  phoneNumbers: ScimPhoneNumber[];
  active: boolean;
  /** Attributes of the enterprise extension (`enterpriseUserSchema`), kept as sent. */
  enterprise: Record<string, unknown>;
}

export interface GroupDoc {
  displayName: string;
  externalId?: string;
  /** User ids, unique, in the order they were added. */
  members: string[];
}
