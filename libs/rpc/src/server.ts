import * as grpc from '@grpc/grpc-js';
import {
  create,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  type Message,
} from '@bufbuild/protobuf';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { DomainError } from '@costgov/errors';
import { withIncomingTrace, withLogContext, type Logger } from '@costgov/log';
import { contextOf, metadataGetter, type CallContext } from './context';
import { grpcDefinitionOf, methodPath } from './definition';
import { maxMetadataBytes, toGrpcStatus } from './errors';
import { addHealthService } from './health';

/** A handler per RPC, named by its localName (`createProject`), typed from the descriptor. */
export type ServiceImpl<S extends DescService> = {
  [K in keyof S['method']]: S['method'][K] extends DescMethodUnary<infer I, infer O>
    ? (request: MessageShape<I>, ctx: CallContext) => Promise<MessageInitShape<O>>
    : never;
};

type UnaryHandler = (request: Message, ctx: CallContext) => Promise<MessageInitShape<DescMethod['output']>>;

export interface RpcServerDeps {
  logger: Pick<Logger, 'debug' | 'error'>;
  /** Told of every finished call, e.g. to record it in metrics. */
  onCall?: (call: { service: string; method: string; code: string; seconds: number }) => void;
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
        const handle = (impl as Record<string, UnaryHandler | undefined>)[method.localName];
        if (typeof handle !== 'function') {
          throw new Error(`${service.typeName}: no handler for ${method.localName} (rpc ${method.name}).`);
        }
        handlers[method.localName] = unaryHandler(method, handle, logger, onCall);
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
  const path = methodPath(method.parent, method.name);
  return (call, callback) => {
    const started = performance.now();
    let answered = false;
    const answer: typeof callback = (...args) => {
      callback(...args);
      answered = true; // only once it went through: a callback that threw gets the generic status below
    };
    // Whatever one call throws, at any step, ends that call and nothing else: the promise is caught here.
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
          response = create(method.output, await handle(call.request, ctx));
        } catch (error) {
          failure = toGrpcStatus(error);
          if (!(error instanceof DomainError) || error.code === 'internal_error') {
            logger.error({ err: error, method: path }, 'rpc handler failed');
          }
        }
        if (failure) answer(failure);
        else answer(null, response);
        // A caller that gave up (deadline, cancel) never saw this outcome; log what it did see.
        const code = call.cancelled ? grpc.status.CANCELLED : (failure?.code ?? grpc.status.OK);
        const elapsed = performance.now() - started;
        logger.debug(
          { method: path, code: grpc.status[code], ms: Math.round(elapsed * 10) / 10 },
          'rpc call',
        );
        onCall?.({
          service: method.parent.typeName,
          method: method.name,
          code: grpc.status[code],
          seconds: elapsed / 1000,
        });
      });
    }
  };
}
