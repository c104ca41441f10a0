import { execFile } from 'node:child_process';
import http2 from 'node:http2';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { budgets } from '@costgov/contracts';
import { DomainError, UnavailableError } from '@costgov/errors';
import { freePort } from '@costgov/testing';
import { createRpcClient } from '../src/client';
import { createUnaryChannel } from '../src/unary-channel';
import { countingRelay, startProjectsServer } from './fixture';

const { ProjectsService } = budgets;
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A bare HTTP/2 server (no gRPC), answering every stream as `respond` says. */
async function http2Server(respond: (stream: http2.ServerHttp2Stream) => void): Promise<string> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    respond(stream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  return `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

describe('unary calls', () => {
  it('share one connection per address, however many there are', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const relay = await countingRelay(Number(backend.address.split(':')[1]));
    cleanup.push(() => relay.close());
    const client = createRpcClient(ProjectsService, `127.0.0.1:${relay.port}`);
    cleanup.push(() => client.close());

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.getProject({ id: `prj_${i}` })),
    );
    expect(answers.map((a) => a.id)).toEqual(Array.from({ length: 50 }, (_, i) => `prj_${i}`));
    await client.getProject({ id: 'prj_again' });
    expect(relay.connections()).toBe(1);
  });

  it('move to a fresh connection before the stream ids of one run out', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const relay = await countingRelay(Number(backend.address.split(':')[1]));
    cleanup.push(() => relay.close());
    const channel = createUnaryChannel(`127.0.0.1:${relay.port}`, 250, { streamsPerSession: 3 });
    cleanup.push(() => channel.close());
    const getProject = ProjectsService.method.getProject;
    for (let i = 0; i < 7; i++) {
      const answer = await channel.call(
        getProject,
        create(getProject.input, { id: `prj_${i}` }),
        {},
        Date.now() + 2_000,
      );
      expect(answer).toMatchObject({ id: `prj_${i}` });
    }
    expect(relay.connections()).toBe(3); // 3 + 3 + 1 calls
  });

  it('drop a connection whose peer stopped answering, after a call ran out of time on it', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const relay = await countingRelay(Number(backend.address.split(':')[1]));
    cleanup.push(() => relay.close());
    const channel = createUnaryChannel(`127.0.0.1:${relay.port}`, 250, { pingTimeoutMs: 300 });
    cleanup.push(() => channel.close());
    const getProject = ProjectsService.method.getProject;
    const call = (id: string, ms: number) =>
      channel.call(getProject, create(getProject.input, { id }), {}, Date.now() + ms);

    await expect(call('prj_1', 2_000)).resolves.toMatchObject({ id: 'prj_1' });
    relay.freeze(); // the peer is gone without a reset: nothing comes back, nothing closes
    await expect(call('prj_2', 300)).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the PING it sent went unanswered
    await expect(call('prj_3', 2_000)).resolves.toMatchObject({ id: 'prj_3' });
    expect(relay.connections()).toBe(2);
  });

  it('take no deadline as none, not as one already past', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    let serverDeadline: Date | undefined = new Date(0);
    backend.handlers.getProject = async (request, ctx) => {
      serverDeadline = ctx.deadline;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { id: request.id };
    };
    const client = createRpcClient(ProjectsService, backend.address, { deadlineMs: Infinity });
    cleanup.push(() => client.close());
    await expect(client.getProject({ id: 'prj_1' })).resolves.toMatchObject({ id: 'prj_1' });
    expect(serverDeadline).toBeUndefined();
  });

  it("take grpc-js's form of an address too (dns:///host:port)", async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const client = createRpcClient(ProjectsService, `dns:///${backend.address}`);
    cleanup.push(() => client.close());
    await expect(client.getProject({ id: 'prj_1' })).resolves.toMatchObject({ id: 'prj_1' });
  });

  it('fail with UnavailableError when the backend dies mid-call, and work again once it is back', async () => {
    const port = await freePort();
    let backend = await startProjectsServer(port);
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    backend.handlers.getProject = () => {
      entered();
      return new Promise(() => undefined); // never answers
    };
    const client = createRpcClient(ProjectsService, backend.address, { deadlineMs: 5_000 });
    cleanup.push(() => client.close());

    const pending = client.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    await inHandler;
    await backend.server.shutdown(0); // cancels what is running and closes its connections
    const started = Date.now();
    expect(await pending).toBeInstanceOf(UnavailableError);
    expect(Date.now() - started).toBeLessThan(1_000);

    backend = await startProjectsServer(port);
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    await expect(client.getProject({ id: 'prj_2' })).resolves.toMatchObject({ id: 'prj_2' });
  });

  it.each([
    [
      'a proxy answering 503 without a gRPC status',
      (stream: http2.ServerHttp2Stream) => stream.respond({ ':status': 503 }, { endStream: true }),
      UnavailableError,
      'service_unavailable',
    ],
    [
      'a stream that ends without a status',
      (stream: http2.ServerHttp2Stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
        stream.end();
      },
      DomainError,
      'internal_error',
    ],
    [
      'an answer larger than 4 MiB',
      (stream: http2.ServerHttp2Stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
        stream.on('error', () => undefined);
        stream.write(Buffer.alloc(5 * 1024 * 1024));
      },
      DomainError,
      undefined,
    ],
    [
      'an answer that is not a message of the method',
      (stream: http2.ServerHttp2Stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]));
      },
      DomainError,
      'internal_error',
    ],
  ])('reject with a DomainError, never a throw, on %s', async (_, respond, expected, code) => {
    const address = await http2Server(respond);
    const client = createRpcClient(ProjectsService, address, { deadlineMs: 3_000 });
    cleanup.push(() => client.close());
    const error = await client.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(expected);
    if (code) expect(error).toMatchObject({ code });
  });

  it('end at the deadline and cancel the call on the server', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    let cancelled!: () => void;
    const serverSawCancel = new Promise<void>((resolve) => (cancelled = resolve));
    backend.handlers.getProject = (_request, ctx) =>
      new Promise(() => {
        const left = ctx.deadline!.getTime() - Date.now();
        setTimeout(cancelled, left + 50); // the server's own deadline, from grpc-timeout
      });
    const client = createRpcClient(ProjectsService, backend.address);
    cleanup.push(() => client.close());
    const started = Date.now();
    const error = await client
      .getProject({ id: 'prj_1' }, { deadline: new Date(Date.now() + 300) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError); // DEADLINE_EXCEEDED is a backend not answering in time
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(1_500);
    await serverSawCancel;
  });

  it('record a CLIENT span under a recorded parent, and send its context to the server', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    cleanup.push(() => {
      trace.disable();
      context.disable();
      propagation.disable();
    });

    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    let seenByServer: { traceId?: string; spanId?: string } | undefined;
    backend.handlers.getProject = async (request) => {
      seenByServer = trace.getSpanContext(context.active()); // the trace the server continues
      return { id: request.id };
    };
    const client = createRpcClient(ProjectsService, backend.address);
    cleanup.push(() => client.close());

    const parent = provider.getTracer('test').startSpan('request');
    await context.with(trace.setSpan(context.active(), parent), () => client.getProject({ id: 'prj_1' }));
    parent.end();

    const span = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CLIENT);
    expect(span).toMatchObject({
      name: 'grpc.costgov.budgets.v1.ProjectsService/GetProject',
      attributes: { 'rpc.system': 'grpc', 'rpc.method': 'GetProject', 'rpc.grpc.status_code': 0 },
    });
    expect(span!.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(seenByServer).toMatchObject({
      traceId: span!.spanContext().traceId,
      spanId: span!.spanContext().spanId,
    });
  });
});

describe('a client left open', () => {
  it('does not keep its process alive once its calls are done', async () => {
    const backend = await startProjectsServer();
    cleanup.push(() => backend.server.shutdown(0));
    backend.handlers.getProject = async (request) => ({ id: request.id });
    const script = `
      import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { budgets } from '@costgov/contracts';
      import { createRpcClient } from '../src/client';
import { createUnaryChannel } from '../src/unary-channel';
      const client = createRpcClient(budgets.ProjectsService, process.argv[1]);
      client.getProject({ id: 'prj_1' }).then((p) => console.log(p.id));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, backend.address],
      { cwd: __dirname, timeout: 20_000 },
    );
    expect(stdout.trim()).toBe('prj_1'); // it answered, then the process ended on its own
  });
});
