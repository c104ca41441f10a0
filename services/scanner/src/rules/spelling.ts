/**
 * Canonical spellings of tag keys and values: case, separators and common synonyms folded, so that
 * `Env`, `env` and `environment` (or `prod` and `Production`) are seen as one.
 */
const keySynonyms: Record<string, string> = {
  env: 'environment',
  environment: 'environment',
  costcenter: 'costcenter',
  cc: 'costcenter',
  costcentre: 'costcenter',
  app: 'application',
  application: 'application',
  appname: 'application',
  owner: 'owner',
  ownedby: 'owner',
  team: 'team',
  teamname: 'team',
  bu: 'businessunit',
  businessunit: 'businessunit',
  project: 'project',
  projectname: 'project',
};

const valueSynonyms: Record<string, string> = {
  prod: 'production',
  prd: 'production',
  production: 'production',
  dev: 'development',
  develop: 'development',
  development: 'development',
  stg: 'staging',
  stage: 'staging',
  staging: 'staging',
  test: 'test',
  tst: 'test',
  testing: 'test',
  qa: 'qa',
  uat: 'uat',
  sandbox: 'sandbox',
  sbx: 'sandbox',
};

const folded = (text: string): string =>
  text
    .trim()
    .toLowerCase()
    .replace(/[\s_.\-:/]+/g, '');

/**
 * A tag key as every tag rule and the posture's tag coverage compare it: lower case, without `-`, `_`
 * and whitespace, so `CostCenter`, `cost-center`, `cost_center` and `costcenter` are one key and a
 * Google Cloud label `environment` (labels must be lower case) satisfies a required `Environment`.
 * Always so (no team setting): keys that differ only by case or these separators never mean two things
 * in practice. costs' GetTagCoverage matches keys with the same expression in SQL.
 */
export const tagKeyOf = (key: string): string => key.toLowerCase().replace(/[-_\s]+/g, '');

export const canonicalKey = (key: string): string => keySynonyms[folded(key)] ?? folded(key);

export const canonicalValue = (value: string): string => valueSynonyms[folded(value)] ?? folded(value);
