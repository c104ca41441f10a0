/** The documents the PATCH engine works on, and the schema URNs they are read and rendered under. */

export const patchOpSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const coreUserSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const coreGroupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const enterpriseUserSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

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
