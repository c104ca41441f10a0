/**
 * SCIM filters (RFC 7644 §3.4.2.2): the lexer and parser build a tree (parser.ts), which becomes
 * parameterised SQL over the identity tables (to-sql.ts, attributes.ts) or is evaluated in memory for PATCH
 * value filters (match.ts).
 */
export { canonicalAttribute, maxFilterComparisons, maxFilterLength, parseFilter } from './parser';
export type { FilterAttribute, FilterNode, FilterOp, FilterValue } from './parser';
export { filterToSql, likeEscape, type AttributeSpec } from './to-sql';
export { matchesFilter } from './match';
export { groupFilterAttributes, userFilterAttributes } from './attributes';
