import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { DomainError, UnavailableError, ValidationError } from '@costgov/errors';
import { eventually } from '@costgov/testing';
import { createRpcClient, type RpcClient } from '../src/client';
import { recordingLogger } from './fixture';
import { createRpcServer, type RpcServer, type ServiceImpl } from '../src/server';

// A real client-streaming method of the contracts; the other methods of the service are not called.
const { CostDataService } = costs;
type Upload = ServiceImpl<typeof CostDataService>['uploadCostData'];
type Part =
  Parameters<RpcClient<typeof CostDataService>['uploadCostData']>[0] extends AsyncIterable<infer P>
    ? P
    : never;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const chunkOf = (index: number, size = 1024) => new Uint8Array(size).fill(index % 256);
const start: Part = {
  part: { case: 'start', value: { connectionId: 'con_1', contentEncoding: 'identity' } },
};

// Anything that escapes a call ends up here: a streaming failure must never reach the process.
const escaped: unknown[] = [];
const recordEscape = (error: unknown) => void escaped.push(error);

let server: RpcServer;
let address: string;
let client: RpcClient<typeof CostDataService>;
let upload: Upload;
const calls: Array<{ method: string; code: string }> = [];
const { logger, lines } = recordingLogger();

beforeAll(async () => {
  process.on('uncaughtException', recordEscape);
  process.on('unhandledRejection', recordEscape);
  server = createRpcServer({ logger, onCall: (call) => void calls.push(call) });
  const unused = async (): Promise<never> => {
    throw new Error('not called');
  };
  server.add(CostDataService, {
    uploadCostData: (requests, ctx) => upload(requests, ctx),
    getSpend: unused,
    getDailySpend: unused,
    getTagCoverage: unused,
  });
  address = `127.0.0.1:${await server.listen('127.0.0.1:0')}`;
  client = createRpcClient(CostDataService, address);
});
afterEach(() => {
  expect(escaped).toEqual([]);
  escaped.splice(0);
});
afterAll(async () => {
  client.close();
  await server.shutdown(0);
  process.off('uncaughtException', recordEscape);
  process.off('unhandledRejection', recordEscape);
});

/** Yields the start message, then `count` chunks (Infinity: never ends), recording how far it got. */
function parts(count: number, size = 1024) {
  const progress = { produced: 0, finished: false };
  async function* generate(): AsyncGenerator<Part> {
    try {
      yield start;
      for (let i = 0; i < count; i++) {
        progress.produced = i + 1;
        yield { part: { case: 'chunk', value: chunkOf(i, size) } };
      }
    } finally {
      progress.finished = true;
    }
  }
  return { progress, requests: generate() };
}

/** What a handler that reads everything saw: the start message and each chunk's first byte. */
async function readAll(requests: AsyncIterable<costs.UploadCostDataRequest>, delayMs = 0) {
  const seen: { start?: costs.UploadStart; chunks: number[]; bytes: number } = { chunks: [], bytes: 0 };
  for await (const request of requests) {
    if (request.part.case === 'start') seen.start = request.part.value;
    if (request.part.case === 'chunk') {
      seen.chunks.push(request.part.value[0]!);
      seen.bytes += request.part.value.byteLength;
    }
    if (delayMs > 0) await sleep(delayMs);
  }
  return seen;
}

describe('client-streaming calls', () => {
  it('deliver every message in order and answer once the client ends', async () => {
    let seen: Awaited<ReturnType<typeof readAll>> | undefined;
    upload = async (requests, ctx) => {
      seen = await readAll(requests);
      return { connectionId: ctx.teamId, rows: BigInt(seen.chunks.length), bytes: BigInt(seen.bytes) };
    };
    const { requests } = parts(600);
    const summary = await client.uploadCostData(requests, { teamId: 'team_1', requestId: 'req_stream1' });
    expect(seen!.start).toMatchObject({ connectionId: 'con_1', contentEncoding: 'identity' });
    expect(seen!.chunks).toEqual(Array.from({ length: 600 }, (_, i) => i % 256));
    expect(summary).toMatchObject({ connectionId: 'team_1', rows: 600n, bytes: 600n * 1024n });
    expect(calls.at(-1)).toMatchObject({ method: 'UploadCostData', code: 'OK' });
  });

  it('carry 64 KiB chunks of a multi-megabyte body', async () => {
    upload = async (requests) => {
      const seen = await readAll(requests);
      return { bytes: BigInt(seen.bytes), rows: BigInt(seen.chunks.length) };
    };
    const { requests } = parts(160, 64 * 1024);
    await expect(client.uploadCostData(requests)).resolves.toMatchObject({
      bytes: 160n * 65_536n,
      rows: 160n,
    });
  });

  it('slow the sender to the pace of a slow server (backpressure)', async () => {
    const { progress, requests } = parts(120, 64 * 1024);
    let maxAhead = 0;
    upload = async (messages) => {
      let consumed = 0;
      for await (const message of messages) {
        if (message.part.case !== 'chunk') continue;
        consumed++;
        maxAhead = Math.max(maxAhead, progress.produced - consumed);
        await sleep(10);
      }
      return { rows: BigInt(consumed) };
    };
    await expect(client.uploadCostData(requests)).resolves.toMatchObject({ rows: 120n });
    // Without backpressure the whole 7.5 MiB would be produced before the server read the tenth chunk.
    expect(maxAhead).toBeGreaterThan(0);
    expect(maxAhead).toBeLessThan(80);
  });

  it('fail with the server error raised mid-stream, and stop pulling from an endless iterable', async () => {
    upload = async (requests) => {
      let n = 0;
      for await (const request of requests) {
        if (request.part.case === 'chunk' && ++n === 5) {
          throw new ValidationError([{ field: 'row 5, column BilledCost', message: 'is not a number' }]);
        }
      }
      return {};
    };
    const { progress, requests } = parts(Infinity);
    const error = await client.uploadCostData(requests).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toEqual([
      { field: 'row 5, column BilledCost', message: 'is not a number' },
    ]);
    expect(progress.finished).toBe(true);
    expect(calls.at(-1)).toMatchObject({ method: 'UploadCostData', code: 'INVALID_ARGUMENT' });
  });

  it('stop writing when the server answers before reading everything', async () => {
    upload = async (requests) => {
      for await (const request of requests) if (request.part.case === 'start') break;
      return { rows: 0n };
    };
    const { progress, requests } = parts(Infinity);
    await expect(client.uploadCostData(requests)).resolves.toMatchObject({ rows: 0n });
    expect(progress.finished).toBe(true);
  });

  it('cancel the call when the iterable throws, reject with that error, and never look complete to the server', async () => {
    let handlerSaw: unknown;
    upload = async (requests) => {
      try {
        await readAll(requests);
      } catch (error) {
        handlerSaw = error;
        throw error;
      }
      return {};
    };
    async function* failing(): AsyncGenerator<Part> {
      yield start;
      yield { part: { case: 'chunk', value: chunkOf(1) } };
      await sleep(50);
      throw new DomainError('bad_request', 'The upload body was cut off.');
    }
    const error = await client.uploadCostData(failing()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'bad_request', message: 'The upload body was cut off.' });
    // grpc-js half-closes before it resets: without the end marker the handler would see a whole stream.
    await eventually(() => expect(handlerSaw).toBeInstanceOf(UnavailableError), 5_000);
    expect(calls.at(-1)!.code).toMatch(/^(CANCELLED|UNAVAILABLE)$/);
  });

  it('turn any other error of the iterable into a DomainError', async () => {
    upload = async (requests) => {
      await readAll(requests).catch(() => undefined);
      return {};
    };
    async function* failing(): AsyncGenerator<Part> {
      yield start;
      throw new Error('EIO: disk gone');
    }
    const error = await client.uploadCostData(failing()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'internal_error' });
  });

  it('end at the caller deadline with UnavailableError, and the handler sees the cancellation', async () => {
    let handlerSaw: unknown;
    upload = async (requests) => {
      try {
        await readAll(requests, 20);
      } catch (error) {
        handlerSaw = error;
      }
      return {};
    };
    const { progress, requests } = parts(Infinity);
    const started = Date.now();
    const error = await client
      .uploadCostData(requests, { deadline: new Date(Date.now() + 300) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(progress.finished).toBe(true);
    await eventually(() => expect(handlerSaw).toBeInstanceOf(UnavailableError), 5_000);
  });

  it('take their deadline from streamDeadlineMs, not from the unary deadlineMs', async () => {
    // streamDeadlineMs leaves a loaded CI machine room: 8 chunks took over 800 ms there once.
    const streaming = createRpcClient(CostDataService, address, { deadlineMs: 100, streamDeadlineMs: 2_500 });
    try {
      upload = async (requests) => ({ rows: BigInt((await readAll(requests, 50)).chunks.length) });
      // 8 chunks at 50 ms each outlast deadlineMs but not streamDeadlineMs.
      await expect(streaming.uploadCostData(parts(8).requests)).resolves.toMatchObject({ rows: 8n });
      const error = await streaming.uploadCostData(parts(Infinity).requests).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnavailableError);
    } finally {
      streaming.close();
    }
  });

  it('end the handler with UnavailableError when the client disappears, and the server keeps serving', async () => {
    const proxy = await startProxy(address.split(':')[1]!);
    const vanishing = createRpcClient(CostDataService, `127.0.0.1:${proxy.port}`);
    let handlerSaw: unknown;
    let received = 0;
    upload = async (requests) => {
      try {
        for await (const request of requests) if (request.part.case === 'chunk') received++;
      } catch (error) {
        handlerSaw = error;
        throw error;
      }
      return {};
    };
    const pending = vanishing.uploadCostData(parts(Infinity).requests).catch((e: unknown) => e);
    await eventually(() => expect(received).toBeGreaterThan(10), 5_000);
    proxy.cut(); // the client's connection is gone, as when its process is killed
    await eventually(() => expect(handlerSaw).toBeInstanceOf(UnavailableError), 5_000);
    expect(await pending).toBeInstanceOf(UnavailableError);
    vanishing.close();
    await proxy.close();

    upload = async (requests) => ({ rows: BigInt((await readAll(requests)).chunks.length) });
    await expect(client.uploadCostData(parts(3).requests)).resolves.toMatchObject({ rows: 3n });
    expect(lines.error).toEqual([]);
  });
});

/** A TCP proxy to the server whose connections can be cut at once. */
async function startProxy(targetPort: string) {
  const sockets = new Set<Socket>();
  const proxy: Server = createServer((inbound) => {
    const outbound = connect(Number(targetPort), '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    cut: () => sockets.forEach((socket) => socket.destroy()),
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}
