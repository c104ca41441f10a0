import { fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import type { CloudEvent } from './cloudevent';

/**
 * Event payloads are the proto messages of `proto/costgov/events/v1` in their JSON form. Fields with
 * default values are written too, so consumers that read raw JSON (webhooks, logs) see every field.
 */
export const encodePayload = <Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): JsonValue => toJson(schema, message, { alwaysEmitImplicit: true });

/** Reads an event's payload as a proto message; fields a newer producer added are ignored. */
export const decodeEvent = <Desc extends DescMessage>(schema: Desc, event: CloudEvent): MessageShape<Desc> =>
  fromJson(schema, event.data as JsonValue, { ignoreUnknownFields: true });
