import { once } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import {
  create,
  type DescMethod,
  type DescMethodClientStreaming,
  type DescMethodUnary,
  type DescService,
  type Message,
} from '@bufbuild/protobuf';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { metadataOf, type CallContext } from './context';
import { clientConstructorOf, streamEnd } from './definition';
import { maxMetadataBytes, toDomainError } from './errors';
import { createUnaryChannel } from './unary-channel';

/**
 * One async function per RPC, named by its localName, rejecting with DomainErrors; plus close(). A
 * client-streaming RPC takes its requests as an async iterable, sent as fast as the server reads them.
 */
export type RpcClient<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageInitShape<I>, ctx?: CallContext) => Promise<MessageShape<O>>
    : S['method'][K] extends DescMethodClientStreaming<infer I, infer O>
      ? (requests: AsyncIterable<MessageInitShape<I>>, ctx?: CallContext) => Promise<MessageShape<O>>
      : never;
} & { close(): void };

export interface RpcClientOptions {
  /** Upper bound of every call; a sooner ctx.deadline wins. */
  deadlineMs?: number;
  /**
   * How long a call waits for a channel that failed to connect to get through on its next dial (every
   * ~100 ms) before it fails with UnavailableError. Default 250 ms.
   */
  reconnectWaitMs?: number;
  /**
   * Upper bound of every client-streaming call (an upload may take minutes); a sooner ctx.deadline wins.
   * Default 1 hour.
   */
  streamDeadlineMs?: number;
}

type ClientStreamingInvoke = (
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: grpc.requestCallback<Message>,
) => grpc.ClientWritableStream<Message>;

/** Every channel of this library: RPC clients and health checkers (not exported from the package). */
export const channelOptions: grpc.ChannelOptions = {
  // A channel whose dial failed fails every call until its backoff ends (grpc-js: 1 s growing to 2 min),
  // so a restarted backend got 503s for seconds while a fresh health check already reached it. A dial to
  // a backend that is down costs one refused connection, so redial every ~100 ms (grpc-js adds ±20 %).
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 100,
  // A backend that comes back at another address (a recreated container) is looked up again within 1 s.
  'grpc.dns_min_time_between_resolutions_ms': 1_000,
  // Error statuses are bounded (errors.ts) but can exceed grpc-js's 8 KiB default once percent-encoded.
  'grpc.max_metadata_size': maxMetadataBytes,
};

/**
 * A client of `service` at 'host:port': unary calls over one HTTP/2 session (unary-channel.ts), uploads
 * over a grpc-js channel. Calls do not wait for a backend that is down
 * beyond one short redial (reconnectWaitMs), so they fail with UnavailableError long before the deadline,
 * and the first calls after it is back succeed.
 */
export function createRpcClient<S extends DescService>(
  service: S,
  address: string,
  options: RpcClientOptions = {},
): RpcClient<S> {
  if ('close' in service.method) {
    throw new Error(`${service.typeName} has an rpc named close, which RpcClient reserves.`);
  }
  const Client = clientConstructorOf(service); // refuses a method kind this library does not carry
  const deadlineMs = options.deadlineMs ?? 5_000;
  const streamDeadlineMs = options.streamDeadlineMs ?? 3_600_000;
  const reconnectWaitMs = options.reconnectWaitMs ?? 250;
  const unary = createUnaryChannel(address, reconnectWaitMs);
  // grpc-js carries the client-streaming calls (uploads); a service without any opens no channel of it.
  const streaming = service.methods.some((method) => method.methodKind === 'client_streaming')
    ? new Client(address, grpc.credentials.createInsecure(), channelOptions)
    : undefined;
  /** Waits (bounded) for the next dial of a channel in TRANSIENT_FAILURE; any other state needs no wait. */
  const connected = (client: grpc.Client, deadline: number): Promise<void> =>
    client.getChannel().getConnectivityState(false) !== grpc.connectivityState.TRANSIENT_FAILURE
      ? Promise.resolve()
      : new Promise((resolve) =>
          client.waitForReady(Math.min(deadline, Date.now() + reconnectWaitMs), () => resolve()),
        );
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    if (method.methodKind === 'client_streaming') {
      const client = streaming!;
      const invoke = (client as unknown as Record<string, ClientStreamingInvoke>)[method.localName]!.bind(
        client,
      );
      const deadlineOf = (ctx: CallContext) =>
        Math.min(Date.now() + streamDeadlineMs, ctx.deadline?.getTime() ?? Infinity);
      methods[method.localName] = (
        requests: AsyncIterable<MessageInitShape<DescMethod['input']>>,
        ctx: CallContext = {},
      ) =>
        streamCall(method, invoke, requests, ctx, deadlineOf(ctx), (deadline) =>
          connected(client, deadline),
        ).catch((error: unknown) => Promise.reject(toDomainError(error)));
      continue;
    }
    if (method.methodKind !== 'unary') continue; // clientConstructorOf refused every other kind
    const unaryMethod = method as DescMethodUnary;
    // Whatever fails, in the channel or before it (a request that cannot be encoded), is a DomainError.
    methods[method.localName] = (request: MessageInitShape<typeof method.input>, ctx: CallContext = {}) =>
      Promise.resolve()
        .then(() => {
          const deadline = Math.min(Date.now() + deadlineMs, ctx.deadline?.getTime() ?? Infinity);
          return unary.call(unaryMethod, create(method.input, request), ctx, deadline);
        })
        .catch((error: unknown) => Promise.reject(toDomainError(error)));
  }
  methods.close = () => {
    unary.close();
    streaming?.close();
  };
  return methods as RpcClient<S>;
}

/**
 * Sends each request as the iterable yields it and resolves with the server's answer. A write the
 * transport cannot take yet (write() returned false) waits for 'drain', so a slow server slows the
 * iterable instead of filling memory. Writing stops as soon as the call has an outcome (the server may
 * answer, or fail, before it read everything); an iterable that throws cancels the call and the call
 * rejects with that error. The end marker goes last, so the server knows the stream was not cut.
 */
async function streamCall(
  method: DescMethod,
  invoke: ClientStreamingInvoke,
  requests: AsyncIterable<MessageInitShape<DescMethod['input']>>,
  ctx: CallContext,
  deadline: number,
  connected: (deadline: number) => Promise<void>,
): Promise<Message> {
  await connected(deadline);
  const ended = new AbortController();
  let call!: grpc.ClientWritableStream<Message>;
  const outcome = new Promise<Message>((resolve, reject) => {
    const metadata = metadataOf(ctx);
    metadata.setOptions({ waitForReady: false });
    call = invoke(metadata, { deadline: new Date(deadline) }, (error, response) => {
      // Runs inside grpc-js's event handling, where a throw would end the process: settle, never throw.
      ended.abort();
      if (error || !response) reject(toDomainError(error));
      else resolve(response);
    });
  });
  outcome.catch(() => undefined); // observed below; a failure while still writing must not go unhandled
  try {
    for await (const request of requests) {
      if (ended.signal.aborted) break; // returning from the loop also tells the iterable to stop
      if (!call.write(create(method.input, request))) {
        await once(call, 'drain', { signal: ended.signal }).catch(() => undefined);
      }
      if (ended.signal.aborted) break;
    }
  } catch (error) {
    if (!ended.signal.aborted) call.cancel(); // the server sees CANCELLED and stops reading
    // The server's own failure, when it came first, explains more than the iterable's.
    if (ended.signal.aborted) await outcome;
    throw error;
  }
  if (!ended.signal.aborted) {
    call.write(streamEnd); // without it the server takes the stream for a cut one
    call.end();
  }
  return outcome;
}
