import type { MethodDefinition, ServiceClientConstructor, ServiceDefinition } from '@grpc/grpc-js';
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, type DescMessage, type DescService, type Message } from '@bufbuild/protobuf';
import { keepByteOrderMarks } from './text-encoding';

// Before any message is decoded: a leading U+FEFF in a string field is data.
keepByteOrderMarks();

const definitions = new WeakMap<DescService, ServiceDefinition>();
const clientConstructors = new WeakMap<DescService, ServiceClientConstructor>();

/**
 * The last message of every client-streaming call, after the caller's own: cancelling a call from
 * grpc-js half-closes the HTTP/2 stream before resetting it (node's Http2Stream.close ends the writable
 * side first), so a server could take a cut stream for a complete one. A stream that ends without this
 * marker was cut. On the wire it is the single byte 0x00, which is never a valid protobuf message (field
 * number 0 does not exist), so it cannot be confused with a request.
 */
export const streamEnd = Object.freeze({ $typeName: 'costgov.rpc.StreamEnd' }) as unknown as Message;
const streamEndBytes = Buffer.from([0]);

export const methodPath = (service: DescService, methodName: string): string =>
  `/${service.typeName}/${methodName}`;

/**
 * The grpc-js definition of a protobuf-es service, keyed by each method's localName. Going through
 * grpc-js's own service definitions (not raw makeUnaryRequest glue) is what lets the OpenTelemetry
 * grpc instrumentation trace both ends.
 */
export function grpcDefinitionOf(service: DescService): ServiceDefinition {
  const known = definitions.get(service);
  if (known) return known;
  const definition: Record<string, MethodDefinition<Message, Message>> = {};
  for (const method of service.methods) {
    if (method.methodKind !== 'unary' && method.methodKind !== 'client_streaming') {
      throw new Error(
        `${service.typeName}.${method.name} is a ${method.methodKind} method; @costgov/rpc adapts unary and client-streaming methods only.`,
      );
    }
    const streaming = method.methodKind === 'client_streaming';
    definition[method.localName] = {
      path: methodPath(service, method.name),
      requestStream: streaming,
      responseStream: false,
      requestSerialize: streaming ? withStreamEnd(serializerOf(method.input)) : serializerOf(method.input),
      requestDeserialize: streaming
        ? withStreamEndDecoded(deserializerOf(method.input))
        : deserializerOf(method.input),
      responseSerialize: serializerOf(method.output),
      responseDeserialize: deserializerOf(method.output),
    };
  }
  definitions.set(service, definition);
  return definition;
}

/** One client class per service, so the instrumentation wraps its methods once. */
export function clientConstructorOf(service: DescService): ServiceClientConstructor {
  let constructor = clientConstructors.get(service);
  if (!constructor) {
    constructor = grpc.makeGenericClientConstructor(grpcDefinitionOf(service), service.typeName);
    clientConstructors.set(service, constructor);
  }
  return constructor;
}

function serializerOf(schema: DescMessage): (message: Message) => Buffer {
  return (message) => {
    const bytes = toBinary(schema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializerOf(schema: DescMessage): (bytes: Buffer) => Message {
  return (bytes) => fromBinary(schema, bytes);
}

function withStreamEnd(serialize: (message: Message) => Buffer): (message: Message) => Buffer {
  return (message) => (message === streamEnd ? streamEndBytes : serialize(message));
}

function withStreamEndDecoded(deserialize: (bytes: Buffer) => Message): (bytes: Buffer) => Message {
  return (bytes) => (bytes.length === 1 && bytes[0] === 0 ? streamEnd : deserialize(bytes));
}
