/**
 * The SCIM PATCH engine (RFC 7644 §3.5.2): a pure function from a document and a PatchOp body to a new
 * document. It never mutates its input; a failing operation throws, so a request applies whole or not at
 * all. It accepts what Okta and Microsoft Entra really send: `op` in any case, `"True"`/`"False"`,
 * path-less operations whose value has dotted and URN keys, `emails[type eq "work"].value`,
 * `phoneNumbers[type eq "mobile"].value`,
 * `members[value eq "id"]`, member removal with a value array, and placeholder passwords.
 */
export {
  coreGroupSchema,
  coreUserSchema,
  enterpriseUserSchema,
  multiValuedUserAttributes,
  nameFields,
  patchOpSchema,
  type MultiValuedUserAttribute,
  type GroupDoc,
  type ScimEmail,
  type ScimMultiValue,
  type ScimPhoneNumber,
  type ScimName,
  type UserDoc,
} from './documents';
export { assertSafeKeys, readPatchOperations, type PatchOperation, type PatchOpName } from './operations';
export { applyUserPatch, ignoredUserAttributes } from './user';
export { applyGroupPatch } from './group';
