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
import { DomainError, UnavailableError } from '@costgov/errors';
import { withIncomingTrace, withLogContext, type Logger } from '@costgov/log';
import { contextOf, metadataGetter, replayedTrailer, type CallContext } from './context';
import { grpcDefinitionOf, methodPath, streamEnd } from './definition';
import { maxMetadataBytes, toGrpcStatus } from './errors';
import { addHealthService } from './health';

/**
 * A handler per RPC, named by its localName (`createProject`), typed from the descriptor. A
 * client-streaming handler reads its requests as they arrive; a cancelled call (the caller gave up, its
 * deadline passed) ends that iteration with an UnavailableError.
 */
export type ServiceImpl<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageShape<I>, ctx: CallContext) => Promise<MessageInitShape<O>>
    : S['method'][K] extends DescMethodClientStreaming<infer I, infer O>
      ? (requests: AsyncIterable<MessageShape<I>>, ctx: CallContext) => Promise<MessageInitShape<O>>
      : never;
};

type Answer = MessageInitShape<DescMethod['output']>;
type UnaryHandler = (request: Message, ctx: CallContext) => Promise<Answer>;
type ClientStreamingHandler = (requests: AsyncIterable<Message>, ctx: CallContext) => Promise<Answer>;

export interface RpcServerDeps {
  logger: Pick<Logger, 'debug' | 'error'>;
  /** Told of every finished call, e.g. to record it in metrics. */
  onCall?: (call: {
    service: string;
    method: string;
    /** The status's name (`OK`, `UNAVAILABLE`) and its number (`statusCode`: 0, 14). */
    code: string;
    statusCode: number;
    seconds: number;
  }) => void;
}

export type RpcServer = ReturnType<typeof createRpcServer>;

export function createRpcServer({ logger, onCall }: RpcServerDeps) {
  const server = new grpc.Server({ 'grpc.max_metadata_size': maxMetadataBytes });
  const health = addHealthService(server);
  const services = new Set<string>(['']);

  return {
    add<S extends DescService>(service: S, impl: ServiceImpl<S>): void {
      const definition = grpcDefinitionOf(service); // first, so a streaming method is named as the problem
      const handlers: grpc.UntypedServiceImplementation = {};
      for (const method of service.methods) {
        const handle = (impl as Record<string, unknown>)[method.localName];
        if (typeof handle !== 'function') {
          throw new Error(`${service.typeName}: no handler for ${method.localName} (rpc ${method.name}).`);
        }
        handlers[method.localName] =
          method.methodKind === 'client_streaming'
            ? clientStreamingHandler(method, handle as ClientStreamingHandler, logger, onCall)
            : unaryHandler(method, handle as UnaryHandler, logger, onCall);
      }
      server.addService(definition, handlers);
      services.add(service.typeName);
      health.setStatus(service.typeName, 'SERVING');
    },

    /** Binds 'host:port' (port 0 picks a free one) and resolves with the bound port. */
    listen(address: string): Promise<number> {
      return new Promise((resolve, reject) => {
        server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, port) =>
          error ? reject(error) : resolve(port),
        );
      });
    },

    /** Health status of a registered service by its full name, or of the whole server for ''. */
    setServing(serviceName: string, serving: boolean): void {
      if (!services.has(serviceName)) {
        throw new Error(
          `Unknown service '${serviceName}'; known: ${[...services].map((s) => `'${s}'`).join(', ')}.`,
        );
      }
      health.setStatus(serviceName, serving ? 'SERVING' : 'NOT_SERVING');
    },

    /** Refuses new calls, lets in-flight ones finish for up to graceMs, then cancels what is left. */
    async shutdown(graceMs = 10_000): Promise<void> {
      for (const name of services) health.setStatus(name, 'NOT_SERVING');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

function unaryHandler(
  method: DescMethod,
  handle: UnaryHandler,
  logger: RpcServerDeps['logger'],
  onCall: RpcServerDeps['onCall'],
): grpc.handleUnaryCall<Message, Message> {
  return (call, callback) =>
    serveCall(method, call, callback, logger, onCall, (ctx) => handle(call.request, ctx));
}

function clientStreamingHandler(
  method: DescMethod,
  handle: ClientStreamingHandler,
  logger: RpcServerDeps['logger'],
  onCall: RpcServerDeps['onCall'],
): grpc.handleClientStreamingCall<Message, Message> {
  return (call, callback) =>
    serveCall(method, call, callback, logger, onCall, (ctx) => handle(requestsOf(call), ctx));
}

/**
 * The requests of a client-streaming call, one at a time: grpc-js reads the next message off the wire
 * only when the handler asks, so a slow handler slows the sender (HTTP/2 flow control). A stream that
 * ends without the caller's end marker, or a cancelled call (the caller gave up, went away, its deadline
 * passed), ends the iteration with an UnavailableError: a handler never takes a cut stream for a whole one.
 */
async function* requestsOf(call: grpc.ServerReadableStream<Message, Message>): AsyncGenerator<Message> {
  let complete = false;
  try {
    for await (const request of call) {
      if (request === streamEnd) complete = true;
      else if (!complete) yield request as Message;
    }
  } catch (error) {
    if (!call.cancelled) throw error;
  }
  if (!complete || call.cancelled)
    throw new UnavailableError('The caller ended the call before sending all of it.');
}

const replayedMetadata = () => {
  const metadata = new grpc.Metadata();
  metadata.set(replayedTrailer, 'true');
  return metadata;
};

type Call = { metadata: grpc.Metadata; getDeadline(): grpc.Deadline; cancelled: boolean };

/**
 * Runs one call's handler in its trace and log context and answers it once. Whatever one call throws, at
 * any step, ends that call and nothing else: the promise is caught here.
 */
function serveCall(
  method: DescMethod,
  call: Call,
  callback: grpc.sendUnaryData<Message>,
  logger: RpcServerDeps['logger'],
  onCall: RpcServerDeps['onCall'],
  run: (ctx: CallContext) => Promise<Answer>,
): void {
  const path = methodPath(method.parent, method.name);
  const started = performance.now();
  let answered = false;
  const answer: typeof callback = (...args) => {
    callback(...args);
    answered = true; // only once it went through: a callback that threw gets the generic status below
  };
  serve()
    .catch((error: unknown) => {
      logger.error({ err: error, method: path }, 'rpc call failed outside its handler');
      if (!answered) answer({ code: grpc.status.INTERNAL, details: 'An internal error occurred.' });
    })
    .catch(() => undefined); // a logger or callback that throws again has nothing left to tell

  async function serve(): Promise<void> {
    const ctx = contextOf(call.metadata, call.getDeadline());
    const inContext = (fn: () => Promise<void>) =>
      withIncomingTrace(
        call.metadata,
        () => withLogContext({ requestId: ctx.requestId, teamId: ctx.teamId }, fn),
        metadataGetter,
      );
    await inContext(async () => {
      let response: Message | undefined;
      let failure: grpc.StatusObject | undefined;
      try {
        response = create(method.output, await run(ctx));
      } catch (error) {
        failure = toGrpcStatus(error);
        if (!(error instanceof DomainError) || error.code === 'internal_error') {
          logger.error({ err: error, method: path }, 'rpc handler failed');
        }
      }
      if (failure) answer(failure);
      else answer(null, response, ctx.replayed ? replayedMetadata() : undefined);
      // A caller that gave up (deadline, cancel) never saw this outcome; log what it did see.
      const code = call.cancelled ? grpc.status.CANCELLED : (failure?.code ?? grpc.status.OK);
      const elapsed = performance.now() - started;
      logger.debug({ method: path, code: grpc.status[code], ms: Math.round(elapsed * 10) / 10 }, 'rpc call');
      onCall?.({
        service: method.parent.typeName,
        method: method.name,
        code: grpc.status[code],
        statusCode: code,
        seconds: elapsed / 1000,
      });
    });
  }
}
