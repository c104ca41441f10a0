export {
  catalogue,
  eventTypes,
  isEventType,
  type Catalogue,
  type EventType,
  type PayloadOf,
} from './catalogue';
export { decodeEvent, UndecodableEventError, type CloudEventAttributes } from './decode';
export {
  connectEvents,
  type EventHandler,
  type EventsClient,
  type EventsLogger,
  type EventsOptions,
  type ReceivedEvent,
  type SubscribeOptions,
  type Subscription,
} from './subscriber';
export { memoryInbox, postgresInbox, withInbox, type InboxStore, type PgClient, type PgPool } from './inbox';
export { defaultNamespace, streamOf, subjectOf } from './subjects';
