export { scannerModule } from './module';
export { scannerConfig, type ScannerConfig } from './config';
export { scansOptionsFrom } from './scans/options';
export { rules } from './rules/catalogue';
