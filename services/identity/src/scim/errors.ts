/**
 * SCIM errors (RFC 7644 §3.12). The SCIM API answers with its own error body rather than the Guard API's
 * envelope, so the SCIM domain throws this one class and the transport turns it into that body.
 */
export type ScimType =
  | 'invalidFilter'
  | 'invalidValue'
  | 'invalidPath'
  | 'noTarget'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'tooMany';

export const scimErrorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';

export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    detail: string,
  ) {
    super(detail);
    this.name = 'ScimError';
  }

  get detail(): string {
    return this.message;
  }
}

export interface ScimErrorBody {
  schemas: [typeof scimErrorSchema];
  /** The HTTP status, as a string: RFC 7644 defines it so. */
  status: string;
  scimType?: ScimType;
  detail: string;
}

/**
 * The body of a SCIM error response. Anything that is not a ScimError is an internal failure: its
 * message is not shown to the client.
 */
export function scimErrorBody(error: unknown): ScimErrorBody {
  if (!(error instanceof ScimError)) {
    return { schemas: [scimErrorSchema], status: '500', detail: 'Internal server error.' };
  }
  const body: ScimErrorBody = {
    schemas: [scimErrorSchema],
    status: String(error.status),
    detail: error.detail,
  };
  if (error.scimType !== undefined) body.scimType = error.scimType;
  return body;
}
