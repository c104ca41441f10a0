export { costsModule } from './module';
export { costsConfig, type CostsConfig } from './config';
