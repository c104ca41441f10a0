export type {
  Bus,
  BusObserver,
  ConsumeOptions,
  Consumer,
  ConsumerLag,
  DeliveryInfo,
  PublishOptions,
} from './bus';
export { defaultNamespace, type CloudEvent } from './cloudevent';
export { typeMatches } from './patterns';
export { createMemoryBus, type MemoryBusOptions } from './memory';
export { createNatsBus, type NatsBusOptions } from './nats';
export {
  streamName,
  consumerName,
  defaultStreamLimits,
  ensureStream,
  type StreamLimits,
  type StreamChange,
} from './jetstream-setup';
export { outboxMigration } from './migration';
export {
  createOutbox,
  outboxBacklog,
  type Outbox,
  type OutboxEntry,
  type OutboxMessageEntry,
  type OutboxOptions,
} from './outbox';
export { decodeEvent, encodePayload } from './protobuf';
export { startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from './relay';
export { consumeWithInbox, type InboxConsumeOptions } from './inbox';
export { RedeliverLater } from './redeliver';
