export { notifierModule, type NotifierModule, type NotifierOptions } from './module';
export { notifierConfig, type NotifierConfig } from './config';
export {
  deliverableEventTypes,
  internalEventTypes,
  publicEventTypes,
  patternMatches,
} from './events/catalogue';
