export { scannerModule } from './module';
