import type { Request, RequestHandler } from 'express';
import { BadRequestError, textProblem, ValidationError, type FieldViolation } from '@costgov/errors';

/**
 * The one text rule of @costgov/errors applied to every string a request carries: the segments of its
 * path (what become path parameters), its query names and values, and every key and string of its JSON
 * body, however deep. Path and query problems are 400; body problems 422 with the field named on /v1
 * (a well-formed body that fails validation) and SCIM's 400 `invalidValue` on /scim/v2.
 */

const maxViolations = 20;
/** Deeper bodies are refused before anything recurses over them (no document of either API nests so). */
export const maxBodyDepth = 64;

const scimMeta = { scimType: 'invalidValue' };
const plainUrl = /^[\x20-\x24\x26-\x7e]*$/;

function pathViolations(path: string): FieldViolation[] {
  const out: FieldViolation[] = [];
  for (const segment of path.split('/')) {
    if (!segment.includes('%') && !/[^\x20-\x7e]/.test(segment)) continue;
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      out.push({ field: 'path', message: `segment '${segment}' is not valid percent-encoded UTF-8` });
      continue;
    }
    const problem = textProblem(decoded);
    if (problem) out.push({ field: 'path', message: `segment '${segment}' ${problem}` });
  }
  return out;
}

/**
 * The query as sent, not as parsed: Node's querystring turns bytes that are not UTF-8 into U+FFFD
 * without a word, so each name and value is decoded strictly here.
 */
function queryViolations(url: string): FieldViolation[] {
  const start = url.indexOf('?');
  if (start < 0) return [];
  const out: FieldViolation[] = [];
  for (const pair of url.slice(start + 1).split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const parts = equals < 0 ? [pair] : [pair.slice(0, equals), pair.slice(equals + 1)];
    let name = parts[0]!;
    try {
      name = decodeURIComponent(name.replaceAll('+', ' '));
      const problem = textProblem(name);
      if (problem) {
        out.push({ field: name.toWellFormed(), message: `(the parameter name) ${problem}` });
        continue;
      }
      const value = parts[1] === undefined ? '' : decodeURIComponent(parts[1].replaceAll('+', ' '));
      const valueProblem = textProblem(value);
      if (valueProblem) out.push({ field: name, message: valueProblem });
    } catch {
      out.push({ field: name.toWellFormed(), message: 'is not valid percent-encoded UTF-8' });
    }
  }
  return out;
}

const fieldName = (parent: string, key: string | number) =>
  typeof key === 'number' ? `${parent}[${key}]` : parent ? `${parent}.${key}` : key;

/** Every key and string of a parsed JSON body, walked without recursion (a body may nest deeply). */
function bodyViolations(body: unknown): { violations: FieldViolation[]; tooDeep: boolean } {
  const violations: FieldViolation[] = [];
  const stack: Array<{ value: unknown; field: string; depth: number }> = [
    { value: body, field: '', depth: 0 },
  ];
  while (stack.length > 0 && violations.length < maxViolations) {
    const { value, field, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) violations.push({ field: field || 'body', message: problem });
    } else if (value && typeof value === 'object') {
      if (depth >= maxBodyDepth) return { violations, tooDeep: true };
      if (Array.isArray(value)) {
        for (let i = value.length - 1; i >= 0; i--)
          stack.push({ value: value[i], field: fieldName(field, i), depth: depth + 1 });
      } else {
        const keys = Object.keys(value);
        for (let i = keys.length - 1; i >= 0; i--) {
          const key = keys[i]!;
          const problem = textProblem(key);
          if (problem)
            violations.push({ field: fieldName(field, key.toWellFormed()), message: `(the key) ${problem}` });
          stack.push({
            value: (value as Record<string, unknown>)[key],
            field: fieldName(field, key),
            depth: depth + 1,
          });
        }
      }
    }
  }
  return { violations: violations.slice(0, maxViolations), tooDeep: false };
}

/** The rule for one API: `guard` (/v1, the spec's envelope) or `scim` (/scim/v2, SCIM errors). */
export function textRule(api: 'guard' | 'scim'): RequestHandler {
  const meta = api === 'scim' ? scimMeta : {};
  return (req: Request, _res, next) => {
    const url = req.originalUrl;
    // Only an escape (or a byte outside ASCII) can carry a character the rule refuses.
    if (!plainUrl.test(url)) {
      const query = url.indexOf('?');
      const path = query < 0 ? url : url.slice(0, query);
      const inUrl = [...pathViolations(path), ...queryViolations(url)].slice(0, maxViolations);
      if (inUrl.length > 0) {
        const first = inUrl[0]!;
        const what = first.field === 'path' ? 'The path' : `Query parameter '${first.field}'`;
        throw new BadRequestError(`${what} ${first.message}.`, inUrl, meta);
      }
    }
    if (req.body === undefined) return next();
    const { violations, tooDeep } = bodyViolations(req.body);
    if (tooDeep)
      throw new BadRequestError(`The body nests deeper than ${maxBodyDepth} levels.`, [], {
        scimType: 'invalidSyntax',
      });
    if (violations.length > 0) {
      if (api === 'scim') {
        const first = violations[0]!;
        throw new BadRequestError(`'${first.field}' ${first.message}.`, violations, meta);
      }
      throw new ValidationError(violations);
    }
    next();
  };
}
