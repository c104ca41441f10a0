import * as grpc from '@grpc/grpc-js';
import { create, type DescMethodUnary, type DescService, type Message } from '@bufbuild/protobuf';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { metadataOf, type CallContext } from './context';
import { clientConstructorOf } from './definition';
import { maxMetadataBytes, toDomainError } from './errors';

/** One async function per RPC, named by its localName, rejecting with DomainErrors; plus close(). */
export type RpcClient<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageInitShape<I>, ctx?: CallContext) => Promise<MessageShape<O>>
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
}

type UnaryInvoke = (
  request: Message,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: grpc.requestCallback<Message>,
) => grpc.ClientUnaryCall;

const channelOptions: grpc.ChannelOptions = {
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
 * A client of `service` at 'host:port' over one channel. Calls do not wait for a backend that is down
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
  const Client = clientConstructorOf(service);
  const client = new Client(address, grpc.credentials.createInsecure(), channelOptions);
  const deadlineMs = options.deadlineMs ?? 5_000;
  const reconnectWaitMs = options.reconnectWaitMs ?? 250;
  const channel = client.getChannel();
  /** Waits (bounded) for the next dial of a channel in TRANSIENT_FAILURE; any other state needs no wait. */
  const connected = (deadline: number): Promise<void> =>
    channel.getConnectivityState(false) !== grpc.connectivityState.TRANSIENT_FAILURE
      ? Promise.resolve()
      : new Promise((resolve) =>
          client.waitForReady(Math.min(deadline, Date.now() + reconnectWaitMs), () => resolve()),
        );
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    if (method.methodKind !== 'unary') continue; // client streaming: not adapted yet
    const invoke = (client as unknown as Record<string, UnaryInvoke>)[method.localName]!.bind(client);
    const call = async (request: MessageInitShape<typeof method.input>, ctx: CallContext) => {
      const deadline = Math.min(Date.now() + deadlineMs, ctx.deadline?.getTime() ?? Infinity);
      await connected(deadline);
      return new Promise<Message>((resolve, reject) => {
        const metadata = metadataOf(ctx);
        metadata.setOptions({ waitForReady: false }); // grpc-js's default, stated because fail-fast matters here
        invoke(
          create(method.input, request),
          metadata,
          { deadline: new Date(deadline) },
          (error, response) => {
            // Runs inside grpc-js's event handling, where a throw would end the process: settle, never throw.
            if (error || !response) reject(toDomainError(error));
            else resolve(response);
          },
        );
      });
    };
    // Whatever fails, here or in grpc-js (a closed client, a request that cannot be encoded), is a DomainError.
    methods[method.localName] = (request: MessageInitShape<typeof method.input>, ctx: CallContext = {}) =>
      call(request, ctx).catch((error: unknown) => Promise.reject(toDomainError(error)));
  }
  methods.close = () => client.close();
  return methods as RpcClient<S>;
}
