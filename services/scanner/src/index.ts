export { scannerModule } from './module';
export { scannerConfig, type ScannerConfig } from './config';
export { rules } from './rules/catalogue';
