export { violationsModule } from './module';
