import * as grpc from '@grpc/grpc-js';
import { create, type DescMethodUnary, type DescService, type Message } from '@bufbuild/protobuf';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { metadataOf, type CallContext } from './context';
import { clientConstructorOf } from './definition';
import { toDomainError } from './errors';

/** One async function per RPC, named by its localName, rejecting with DomainErrors; plus close(). */
export type RpcClient<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageInitShape<I>, ctx?: CallContext) => Promise<MessageShape<O>>
    : never;
} & { close(): void };

export interface RpcClientOptions {
  /** Upper bound of every call; a sooner ctx.deadline wins. */
  deadlineMs?: number;
}

type UnaryInvoke = (
  request: Message,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: grpc.requestCallback<Message>,
) => grpc.ClientUnaryCall;

const channelOptions: grpc.ChannelOptions = {
  // grpc's reconnect backoff grows to two minutes; a restarted backend should be found within seconds.
  'grpc.max_reconnect_backoff_ms': 5_000,
};

/**
 * A client of `service` at 'host:port' over one channel. Calls do not wait for the channel to become
 * ready, so a backend that is down fails at once with UnavailableError rather than at the deadline.
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
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    const invoke = (client as unknown as Record<string, UnaryInvoke>)[method.localName]!.bind(client);
    methods[method.localName] = (request: MessageInitShape<typeof method.input>, ctx: CallContext = {}) =>
      new Promise<Message>((resolve, reject) => {
        const deadline = Math.min(Date.now() + deadlineMs, ctx.deadline?.getTime() ?? Infinity);
        const metadata = metadataOf(ctx);
        metadata.setOptions({ waitForReady: false }); // grpc-js's default, stated because fail-fast matters here
        invoke(
          create(method.input, request),
          metadata,
          { deadline: new Date(deadline) },
          (error, response) => {
            if (error || !response) reject(toDomainError(error));
            else resolve(response);
          },
        );
      });
  }
  methods.close = () => client.close();
  return methods as RpcClient<S>;
}
