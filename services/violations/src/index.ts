export { violationsModule } from './module';
export { violationsConfig, type ViolationsConfig } from './config';
