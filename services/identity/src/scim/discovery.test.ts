import { describe, expect, it } from 'vitest';
import {
  defaultDocumentationUri,
  discover,
  listResponseSchema,
  resourceTypes,
  resourceTypeSchema,
  schemaDocuments,
  schemaSchema,
  serviceProviderConfig,
  serviceProviderConfigSchema,
  type ScimAttribute,
  type SchemaDocument,
} from './discovery';
import { ScimError } from './errors';
import { groupFilterAttributes, userFilterAttributes, type AttributeSpec } from './filter';
import { coreGroupSchema, coreUserSchema, enterpriseUserSchema } from './patch';

const baseUrl = 'https://api.example.com/scim/v2';

function scimErrorOf(fn: () => unknown): ScimError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw error;
  }
  throw new Error('expected a ScimError, nothing was thrown');
}

function allAttributes(attributes: ScimAttribute[]): ScimAttribute[] {
  return attributes.flatMap((a) => [a, ...allAttributes(a.subAttributes ?? [])]);
}

describe('ServiceProviderConfig', () => {
  const config = serviceProviderConfig(baseUrl);

  it('says what is supported: PATCH, filters up to 100 results, ETags; no bulk, sort or password change', () => {
    expect(config).toMatchObject({
      schemas: [serviceProviderConfigSchema],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: 100 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      documentationUri: defaultDocumentationUri,
    });
  });

  it('names the team SCIM token as the one, primary, bearer scheme', () => {
    expect(config.authenticationSchemes).toEqual([
      expect.objectContaining({ type: 'oauthbearertoken', name: 'OAuth Bearer Token', primary: true }),
    ]);
    expect(config.authenticationSchemes[0]?.description).toContain('npx costgov scim-tokens create');
  });

  it('is located under the base URL, a trailing slash or not', () => {
    expect(config.meta).toEqual({
      resourceType: 'ServiceProviderConfig',
      location: `${baseUrl}/ServiceProviderConfig`,
    });
    expect(serviceProviderConfig(`${baseUrl}/`).meta.location).toBe(`${baseUrl}/ServiceProviderConfig`);
  });

  it('takes the documentation URL from the composition root', () => {
    const uri = 'https://docs.example.com/scim';
    expect(serviceProviderConfig(baseUrl, { documentationUri: uri }).documentationUri).toBe(uri);
  });
});

describe('Schemas', () => {
  const schemas = schemaDocuments(baseUrl);
  const schema = (id: string): SchemaDocument => {
    const found = schemas.find((s) => s.id === id);
    if (!found) throw new Error(`no schema ${id}`);
    return found;
  };
  const attributeOf = (doc: SchemaDocument, name: string) => doc.attributes.find((a) => a.name === name);

  it('lists the core User, the enterprise extension and the core Group, each a Schema resource under the base URL', () => {
    expect(schemas.map((s) => s.id)).toEqual([coreUserSchema, enterpriseUserSchema, coreGroupSchema]);
    for (const doc of schemas) {
      expect(doc.schemas).toEqual([schemaSchema]);
      expect(doc.id).toMatch(/^urn:ietf:params:scim:schemas:/);
      expect(doc.meta).toEqual({ resourceType: 'Schema', location: `${baseUrl}/Schemas/${doc.id}` });
    }
  });

  it('describes every attribute fully (RFC 7643 §7), names unique within their parent', () => {
    const check = (attributes: ScimAttribute[], where: string) => {
      const names = attributes.map((a) => a.name.toLowerCase());
      expect(new Set(names).size, `duplicate names in ${where}`).toBe(names.length);
      for (const a of attributes) {
        expect(typeof a.description, `${where}.${a.name}`).toBe('string');
        expect(typeof a.required, `${where}.${a.name}`).toBe('boolean');
        expect(typeof a.multiValued, `${where}.${a.name}`).toBe('boolean');
        expect(['readOnly', 'readWrite', 'immutable', 'writeOnly']).toContain(a.mutability);
        expect(['always', 'never', 'default', 'request']).toContain(a.returned);
        if (a.type === 'complex') {
          expect(a.subAttributes?.length, `${where}.${a.name} has sub-attributes`).toBeGreaterThan(0);
          check(a.subAttributes ?? [], `${where}.${a.name}`);
        } else {
          expect(a.subAttributes, `${where}.${a.name}`).toBeUndefined();
        }
        if (a.type === 'string' || a.type === 'reference') expect(typeof a.caseExact).toBe('boolean');
        if (a.type === 'reference') expect(a.referenceTypes?.length).toBeGreaterThan(0);
      }
    };
    for (const doc of schemas) check(doc.attributes, doc.name);
  });

  it('describes userName as required and unique regardless of case, externalId as case-exact, groups as read-only', () => {
    const user = schema(coreUserSchema);
    expect(attributeOf(user, 'userName')).toMatchObject({
      type: 'string',
      required: true,
      caseExact: false,
      uniqueness: 'server',
    });
    expect(attributeOf(user, 'externalId')).toMatchObject({ caseExact: true });
    expect(attributeOf(user, 'groups')).toMatchObject({ mutability: 'readOnly', multiValued: true });
    expect(attributeOf(user, 'groups')?.subAttributes?.map((a) => a.name)).toEqual([
      'value',
      '$ref',
      'display',
      'type',
    ]);
    // Every sub-attribute of RFC 7643 §4.1.1, in its order.
    expect(attributeOf(user, 'name')?.subAttributes?.map((a) => a.name)).toEqual([
      'formatted',
      'familyName',
      'givenName',
      'middleName',
      'honorificPrefix',
      'honorificSuffix',
    ]);
    expect(attributeOf(user, 'emails')?.subAttributes?.map((a) => a.name)).toEqual([
      'value',
      'type',
      'primary',
    ]);
    expect(attributeOf(user, 'phoneNumbers')).toMatchObject({ type: 'complex', multiValued: true });
    expect(attributeOf(user, 'phoneNumbers')?.subAttributes?.map((a) => a.name)).toEqual([
      'value',
      'type',
      'primary',
    ]);
    expect(user.attributes.map((a) => a.name)).toEqual([
      'userName',
      'name',
      'displayName',
      'emails',
      'phoneNumbers',
      'active',
      'externalId',
      'groups',
    ]);
  });

  it('describes the enterprise attributes the PATCH engine keeps', () => {
    expect(schema(enterpriseUserSchema).attributes.map((a) => a.name)).toEqual([
      'employeeNumber',
      'costCenter',
      'organization',
      'division',
      'department',
      'manager',
    ]);
  });

  it('describes the group displayName as required and unique, and members with value, display, $ref and type', () => {
    const group = schema(coreGroupSchema);
    expect(attributeOf(group, 'displayName')).toMatchObject({ required: true, uniqueness: 'server' });
    expect(attributeOf(group, 'members')?.subAttributes?.map((a) => a.name)).toEqual([
      'value',
      'display',
      '$ref',
      'type',
    ]);
  });

  // The filter parser and the schemas are two descriptions of the same attributes: a filterable attribute
  // missing here, or with another type or case rule, means discovery promises something else than the
  // filters do.
  describe.each([
    ['User', coreUserSchema, userFilterAttributes],
    ['Group', coreGroupSchema, groupFilterAttributes],
  ] as Array<[string, string, Readonly<Record<string, AttributeSpec>>]>)(
    'every %s filter attribute is described',
    (_name, schemaId, filterAttributes) => {
      // `id` is common to every resource (RFC 7643 §3.1) and belongs to no schema.
      const filterable = Object.entries(filterAttributes).filter(([path]) => path !== 'id');

      it.each(filterable)('%s', (path, spec) => {
        let attributes = schema(schemaId).attributes;
        let described: ScimAttribute | undefined;
        for (const segment of path.split('.')) {
          described = attributes.find((a) => a.name.toLowerCase() === segment);
          expect(described, `'${segment}' of '${path}' in ${schemaId}`).toBeDefined();
          attributes = described?.subAttributes ?? [];
        }
        expect(described?.type).toBe(spec.type);
        if (spec.type === 'string') expect(described?.caseExact).toBe(spec.caseExact);
      });
    },
  );

  it('has every attribute name in the form RFC 7643 §2.1 allows', () => {
    const names = schemas.flatMap((doc) => allAttributes(doc.attributes).map((a) => a.name));
    for (const name of names) expect(name).toMatch(/^(\$ref|[A-Za-z][A-Za-z0-9_-]*)$/);
  });
});

describe('ResourceTypes', () => {
  const types = resourceTypes(baseUrl);
  const schemaIds = schemaDocuments(baseUrl).map((s) => s.id);

  it('lists User (with the optional enterprise extension) and Group at their endpoints', () => {
    expect(types.map((t) => [t.id, t.name, t.endpoint, t.schema])).toEqual([
      ['User', 'User', '/Users', coreUserSchema],
      ['Group', 'Group', '/Groups', coreGroupSchema],
    ]);
    expect(types[0]?.schemaExtensions).toEqual([{ schema: enterpriseUserSchema, required: false }]);
  });

  it('references only schemas that /Schemas lists, and every schema is used', () => {
    const referenced = types.flatMap((t) => [t.schema, ...(t.schemaExtensions ?? []).map((e) => e.schema)]);
    for (const id of referenced) expect(schemaIds).toContain(id);
    expect([...referenced].sort()).toEqual([...schemaIds].sort());
  });

  it('are ResourceType resources under the base URL', () => {
    for (const type of types) {
      expect(type.schemas).toEqual([resourceTypeSchema]);
      expect(type.meta).toEqual({
        resourceType: 'ResourceType',
        location: `${baseUrl}/ResourceTypes/${type.id}`,
      });
    }
  });
});

describe('discover', () => {
  it('answers /ServiceProviderConfig with the document itself', () => {
    expect(discover('ServiceProviderConfig', '', baseUrl)).toEqual(serviceProviderConfig(baseUrl));
  });

  it.each([
    ['Schemas', schemaDocuments(baseUrl)],
    ['ResourceTypes', resourceTypes(baseUrl)],
  ] as const)('answers /%s with a ListResponse of all of them', (endpoint, resources) => {
    expect(discover(endpoint, '', baseUrl)).toEqual({
      schemas: [listResponseSchema],
      totalResults: resources.length,
      startIndex: 1,
      itemsPerPage: resources.length,
      Resources: resources,
    });
  });

  it.each([
    ['Schemas', coreUserSchema, coreUserSchema],
    ['Schemas', enterpriseUserSchema.toUpperCase(), enterpriseUserSchema],
    ['Schemas', coreGroupSchema, coreGroupSchema],
    ['ResourceTypes', 'User', 'User'],
    ['ResourceTypes', 'group', 'Group'],
  ])('answers /%s/%s with that one resource', (endpoint, id, expectedId) => {
    expect(discover(endpoint, id, baseUrl)).toMatchObject({
      id: expectedId,
      meta: { location: `${baseUrl}/${endpoint}/${expectedId}` },
    });
  });

  it.each([
    ['Schemas', 'urn:ietf:params:scim:schemas:core:2.0:Device', /no Schemas resource with id/],
    ['ResourceTypes', 'Device', /no ResourceTypes resource with id 'Device'; known: User, Group/],
    ['ServiceProviderConfig', 'x', /has no resources by id/],
    ['Bulk', '', /unknown discovery endpoint 'Bulk'/],
    ['schemas', '', /unknown discovery endpoint/],
  ])('answers /%s/%s with a 404 SCIM error', (endpoint, id, detail) => {
    const error = scimErrorOf(() => discover(endpoint, id, baseUrl));
    expect(error.status).toBe(404);
    expect(error.scimType).toBeUndefined();
    expect(error.detail).toMatch(detail);
  });

  it('returns fresh documents: a caller changing one does not change the next answer', () => {
    const first = discover('Schemas', coreUserSchema, baseUrl) as SchemaDocument;
    first.attributes.length = 0;
    expect(
      (discover('Schemas', coreUserSchema, baseUrl) as SchemaDocument).attributes.length,
    ).toBeGreaterThan(0);
  });
});
