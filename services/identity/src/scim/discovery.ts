import { ScimError } from './errors';
import { maxCount } from './paging';
import { coreGroupSchema, coreUserSchema, enterpriseUserSchema } from './patch';

/**
 * SCIM discovery (RFC 7644 §4, RFC 7643 §5-7): `/ServiceProviderConfig`, `/Schemas` and `/ResourceTypes`.
 * They describe what this implementation really does (filter.ts, patch.ts), not all of RFC 7643: an
 * identity provider that reads them must not be promised an attribute or feature that is then refused.
 * discovery.test.ts checks the filterable attributes against these schemas.
 */

export const listResponseSchema = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const serviceProviderConfigSchema = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const schemaSchema = 'urn:ietf:params:scim:schemas:core:2.0:Schema';
export const resourceTypeSchema = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';

export type DiscoveryEndpoint = 'ServiceProviderConfig' | 'Schemas' | 'ResourceTypes';
export const discoveryEndpoints: readonly DiscoveryEndpoint[] = [
  'ServiceProviderConfig',
  'Schemas',
  'ResourceTypes',
];

/** The README section on connecting an identity provider; the composition root may pass an absolute URL. */
export const defaultDocumentationUri = 'README.md#scim-provisioning';

export interface DiscoveryOptions {
  documentationUri?: string;
}

export interface ScimMeta {
  resourceType: 'ServiceProviderConfig' | 'Schema' | 'ResourceType';
  location: string;
}

/** An attribute definition (RFC 7643 §7). */
export interface ScimAttribute {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference';
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact?: boolean;
  canonicalValues?: string[];
  referenceTypes?: string[];
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness?: 'none' | 'server' | 'global';
  subAttributes?: ScimAttribute[];
}

export interface SchemaDocument {
  schemas: [typeof schemaSchema];
  id: string;
  name: string;
  description: string;
  attributes: ScimAttribute[];
  meta: ScimMeta;
}

export interface ResourceTypeDocument {
  schemas: [typeof resourceTypeSchema];
  id: string;
  name: string;
  endpoint: string;
  description: string;
  schema: string;
  schemaExtensions?: Array<{ schema: string; required: boolean }>;
  meta: ScimMeta;
}

export interface ServiceProviderConfigDocument {
  schemas: [typeof serviceProviderConfigSchema];
  documentationUri: string;
  patch: { supported: boolean };
  bulk: { supported: boolean; maxOperations: number; maxPayloadSize: number };
  filter: { supported: boolean; maxResults: number };
  changePassword: { supported: boolean };
  sort: { supported: boolean };
  etag: { supported: boolean };
  authenticationSchemes: Array<{
    type: string;
    name: string;
    description: string;
    specUri?: string;
    primary?: boolean;
  }>;
  meta: ScimMeta;
}

export interface ListResponse<T> {
  schemas: [typeof listResponseSchema];
  totalResults: number;
  startIndex: number;
  itemsPerPage: number;
  Resources: T[];
}

export type DiscoveryDocument =
  | ServiceProviderConfigDocument
  | SchemaDocument
  | ResourceTypeDocument
  | ListResponse<SchemaDocument>
  | ListResponse<ResourceTypeDocument>;

const trimSlash = (baseUrl: string): string => baseUrl.replace(/\/+$/, '');

export function serviceProviderConfig(
  baseUrl: string,
  options: DiscoveryOptions = {},
): ServiceProviderConfigDocument {
  return {
    schemas: [serviceProviderConfigSchema],
    documentationUri: options.documentationUri ?? defaultDocumentationUri,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: maxCount },
    changePassword: { supported: false },
    sort: { supported: false },
    // Resources carry meta.version and a weak ETag; writes honour If-Match.
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'The SCIM token generated for the team (npx costgov scim-tokens create)',
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${trimSlash(baseUrl)}/ServiceProviderConfig` },
  };
}

// ---------------------------------------------------------------------------------------------------
// Attribute definitions

type AttributeTraits = Partial<Omit<ScimAttribute, 'name' | 'type' | 'description'>>;

function attribute(
  name: string,
  type: ScimAttribute['type'],
  description: string,
  traits: AttributeTraits = {},
): ScimAttribute {
  const textual = type === 'string' || type === 'reference';
  return {
    name,
    type,
    multiValued: false,
    description,
    required: false,
    ...(textual ? { caseExact: false } : {}),
    mutability: 'readWrite',
    returned: 'default',
    ...(textual ? { uniqueness: 'none' as const } : {}),
    ...traits,
  };
}

function userAttributes(): ScimAttribute[] {
  return [
    attribute(
      'userName',
      'string',
      'Unique identifier of the user in the team, usually an e-mail address. Unique regardless of case; stored as given.',
      { required: true, uniqueness: 'server' },
    ),
    attribute('name', 'complex', "The components of the user's name.", {
      subAttributes: [
        attribute('formatted', 'string', 'The full name, formatted for display.'),
        attribute('familyName', 'string', 'The family (last) name.'),
        attribute('givenName', 'string', 'The given (first) name.'),
        attribute('middleName', 'string', 'The middle name(s).'),
        attribute('honorificPrefix', 'string', "The honorific prefix(es), such as 'Ms.'."),
        attribute('honorificSuffix', 'string', "The honorific suffix(es), such as 'III'."),
      ],
    }),
    attribute('displayName', 'string', 'The name of the user, suitable for display.'),
    attribute(
      'emails',
      'complex',
      'E-mail addresses of the user. The welcome e-mail goes to the primary one.',
      {
        multiValued: true,
        subAttributes: [
          attribute('value', 'string', 'The e-mail address.', { required: true }),
          attribute('type', 'string', "A label such as 'work'.", {
            canonicalValues: ['work', 'home', 'other'],
          }),
          attribute('primary', 'boolean', 'Whether this is the primary address; at most one is.'),
        ],
      },
    ),
    attribute('phoneNumbers', 'complex', 'Phone numbers of the user.', {
      multiValued: true,
      subAttributes: [
        attribute('value', 'string', "The phone number, as sent (such as 'tel:+1-201-555-0123').", {
          required: true,
        }),
        attribute('type', 'string', "A label such as 'work' or 'mobile'.", {
          canonicalValues: ['work', 'home', 'mobile', 'fax', 'pager', 'other'],
        }),
        attribute('primary', 'boolean', 'Whether this is the primary number; at most one is.'),
      ],
    }),
    attribute('active', 'boolean', 'false blocks dashboard and API access at once and keeps the data.'),
    attribute('externalId', 'string', "The identity provider's identifier of the user.", { caseExact: true }),
    attribute('groups', 'complex', 'The groups the user is a member of; changed through the Groups.', {
      multiValued: true,
      mutability: 'readOnly',
      subAttributes: [
        attribute('value', 'string', 'The id of the group.', { mutability: 'readOnly', caseExact: true }),
        attribute('$ref', 'reference', 'The URI of the group.', {
          mutability: 'readOnly',
          caseExact: true,
          referenceTypes: ['Group'],
        }),
        attribute('display', 'string', 'The displayName of the group.', { mutability: 'readOnly' }),
        attribute('type', 'string', 'How the user is a member: directly.', {
          mutability: 'readOnly',
          canonicalValues: ['direct'],
        }),
      ],
    }),
  ];
}

function enterpriseAttributes(): ScimAttribute[] {
  const keptAsSent = 'Kept as sent.';
  return [
    attribute('employeeNumber', 'string', `Employee number. ${keptAsSent}`),
    attribute('costCenter', 'string', `Cost center. ${keptAsSent}`),
    attribute('organization', 'string', `Organization. ${keptAsSent}`),
    attribute('division', 'string', `Division. ${keptAsSent}`),
    attribute('department', 'string', `Department. ${keptAsSent}`),
    attribute(
      'manager',
      'complex',
      "The user's manager: accepted as the manager's id or as {value}; returned as {value, $ref, displayName}.",
      {
        subAttributes: [
          attribute('value', 'string', 'The id of the manager.', { caseExact: true }),
          attribute('$ref', 'reference', 'The URI of the manager, when the manager is a user of the team.', {
            caseExact: true,
            mutability: 'readOnly',
            referenceTypes: ['User'],
          }),
          attribute('displayName', 'string', 'The displayName of the manager.', { mutability: 'readOnly' }),
        ],
      },
    ),
  ];
}

function groupAttributes(): ScimAttribute[] {
  return [
    attribute('displayName', 'string', 'The name of the group. Unique in the team regardless of case.', {
      required: true,
      uniqueness: 'server',
    }),
    attribute('externalId', 'string', "The identity provider's identifier of the group.", {
      caseExact: true,
    }),
    attribute('members', 'complex', 'The users in the group.', {
      multiValued: true,
      subAttributes: [
        attribute('value', 'string', 'The id of the user.', { mutability: 'immutable', caseExact: true }),
        attribute('display', 'string', "The member's userName.", { mutability: 'readOnly' }),
        attribute('$ref', 'reference', 'The URI of the user.', {
          mutability: 'readOnly',
          caseExact: true,
          referenceTypes: ['User'],
        }),
        attribute('type', 'string', 'The type of the member: only users are members.', {
          mutability: 'immutable',
          canonicalValues: ['User'],
        }),
      ],
    }),
  ];
}

export function schemaDocuments(baseUrl: string): SchemaDocument[] {
  const base = trimSlash(baseUrl);
  const schema = (
    id: string,
    name: string,
    description: string,
    attributes: ScimAttribute[],
  ): SchemaDocument => ({
    schemas: [schemaSchema],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    schema(coreUserSchema, 'User', 'A member of the team', userAttributes()),
    schema(enterpriseUserSchema, 'EnterpriseUser', 'Enterprise attributes of a user', enterpriseAttributes()),
    schema(
      coreGroupSchema,
      'Group',
      'A group of users, with its scope and notification policies',
      groupAttributes(),
    ),
  ];
}

export function resourceTypes(baseUrl: string): ResourceTypeDocument[] {
  const base = trimSlash(baseUrl);
  return [
    {
      schemas: [resourceTypeSchema],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A member of the team',
      schema: coreUserSchema,
      schemaExtensions: [{ schema: enterpriseUserSchema, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: [resourceTypeSchema],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A group of users',
      schema: coreGroupSchema,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

function listResponse<T>(resources: T[]): ListResponse<T> {
  return {
    schemas: [listResponseSchema],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/** One resource of a collection by id; schema URNs and resource type names match regardless of case. */
function byId<T extends { id: string }>(resources: T[], id: string, endpoint: DiscoveryEndpoint): T {
  const found = resources.find((resource) => resource.id.toLowerCase() === id.toLowerCase());
  if (!found) {
    throw new ScimError(
      404,
      undefined,
      `no ${endpoint} resource with id '${id}'; known: ${resources.map((r) => r.id).join(', ')}`,
    );
  }
  return found;
}

/**
 * The answer to `GET /<endpoint>` (id empty) or `GET /<endpoint>/<id>`. The endpoint is a string because
 * it arrives over gRPC; anything but the three discovery endpoints is a 404.
 */
export function discover(
  endpoint: string,
  id: string,
  baseUrl: string,
  options: DiscoveryOptions = {},
): DiscoveryDocument {
  switch (endpoint) {
    case 'ServiceProviderConfig':
      if (id !== '') {
        throw new ScimError(404, undefined, `/ServiceProviderConfig has no resources by id (got '${id}')`);
      }
      return serviceProviderConfig(baseUrl, options);
    case 'Schemas': {
      const schemas = schemaDocuments(baseUrl);
      return id === '' ? listResponse(schemas) : byId(schemas, id, endpoint);
    }
    case 'ResourceTypes': {
      const types = resourceTypes(baseUrl);
      return id === '' ? listResponse(types) : byId(types, id, endpoint);
    }
    default:
      throw new ScimError(
        404,
        undefined,
        `unknown discovery endpoint '${endpoint}'; supported: ${discoveryEndpoints.join(', ')}`,
      );
  }
}
