export { scannerModule } from './module';
export { scannerConfig, type ScannerConfig } from './config';
export { rules } from './rules/catalogue';
// How a scan worker stores a scan's findings, for tests that seed findings without running the rules.
export { recordFindings, type RuleResult } from './findings/record';
