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
