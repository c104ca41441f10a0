export { costsModule } from './module';
export { costsConfig, type CostsConfig } from './config';
// The made-up FOCUS export of the README demo, the tests and the benchmark.
export { estateResources, focusCsv, type GenerateOptions } from './cost-data/generate';
// costgov's one definition of a usage-based charge, as SQL over cost_records' columns.
export { usageBasedSql } from './cost-data/usage-based';
