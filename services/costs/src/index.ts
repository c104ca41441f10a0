export { costsModule } from './module';
