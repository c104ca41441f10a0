import { z } from '@costgov/config';
import { bootstrapKeyProblem } from './bootstrap';

/** A variable that may be unset; set to blank (as compose files leave one) it counts as unset. */
const optionalText = z
  .string()
  .trim()
  .optional()
  .transform((value) => value || undefined);

/** What identity reads beyond the variables every service reads (libs/runtime's serviceConfig). */
export const identityConfig = z.object({
  /** First API key of team `default` on an empty database; refused at start when it is a placeholder. */
  GUARD_BOOTSTRAP_API_KEY: z
    .string()
    .optional()
    .transform((value) => value || undefined)
    .superRefine((value, ctx) => {
      const problem = value === undefined ? undefined : bootstrapKeyProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /** OAuth bearer tokens (JWTs) are accepted from this issuer for this audience, when both are set. */
  OAUTH_ISSUER: optionalText,
  OAUTH_AUDIENCE: optionalText,
  /** Where the issuer's signing keys are; `<issuer>/.well-known/jwks.json` when unset. */
  OAUTH_JWKS_URL: optionalText.pipe(
    z.url('must be a URL, e.g. https://issuer.example.com/jwks.json').optional(),
  ),
  /** Accepted signing algorithms, comma-separated. */
  OAUTH_ALGORITHMS: z
    .string()
    .default('RS256,ES256')
    .transform((value) =>
      value
        .split(',')
        .map((algorithm) => algorithm.trim())
        .filter(Boolean),
    ),
  /** Clock tolerance of `exp` and `nbf`, in seconds. */
  OAUTH_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).default(60),
  /** `smtp://user:pass@host:587` for welcome e-mails; unset: `.eml` files under DATA_DIR/mail. */
  SMTP_URL: optionalText.pipe(z.url('must be a URL, e.g. smtp://user:pass@host:587').optional()),
  /** From of the welcome e-mail. */
  MAIL_FROM: optionalText.transform((value) => value ?? 'Cost Governance <no-reply@costgov.local>'),
});

export type IdentityConfig = z.infer<typeof identityConfig>;
