export { budgetsModule } from './module';
