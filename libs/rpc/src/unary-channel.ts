import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, type DescMethodUnary, type Message } from '@bufbuild/protobuf';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { callHeaders, replayedTrailer, type CallContext } from './context';
import { maxMetadataBytes } from './errors';

/**
 * Unary calls over one HTTP/2 session of node:http2, without grpc-js's channel, resolver, balancer and
 * call layers. Written by hand because grpc-js was the largest cost of the gateway's hot path: 125 µs
 * of CPU per unary call against 55 to 62 µs for the same call over node:http2 (libs/bench/README.md);
 * Connect's node transport was slower still. Client-streaming calls stay on grpc-js.
 *
 * What it keeps of grpc-js's behaviour: the gRPC wire format and status trailers (grpc-status,
 * grpc-message, grpc-status-details-bin) read into the same ServiceError shape; `grpc-timeout` from the
 * deadline, enforced here too; a dial per address like pick_first on a resolved name, redialled on the
 * next call once ~100 ms have passed since a failed dial; a call on a session the server is closing
 * (GOAWAY, refused stream) tried once more on a fresh session, as grpc-js's transparent retry does;
 * a CLIENT span when the caller's span is recorded (an exporter is configured).
 */
export interface UnaryChannel {
  call(method: DescMethodUnary, request: Message, ctx: CallContext, deadline: number): Promise<Message>;
  /** Closes the session; calls in flight finish, later calls fail with UNAVAILABLE. */
  close(): void;
}

/** How long after a failed dial a call waits for the next one instead of dialling at once (grpc-js: ~100 ms here). */
const redialAfterMs = 100;
/** Upper bound of one dial whatever the deadline of the calls waiting for it (grpc-js: 20 s). */
const dialTimeoutMs = 20_000;
/** Largest answer accepted, grpc-js's default. */
const maxReceiveBytes = 4 * 1024 * 1024;
/**
 * Streams one session carries before calls move to a fresh one: a client's stream ids are the odd numbers
 * below 2^31, and a session whose ids ran out refuses every request (about 4 days at 3,000 calls/s).
 */
const defaultStreamsPerSession = 2 ** 30 - 2 ** 20;
/**
 * After a call ran out of time, the session's peer must answer a PING within this long or the session is
 * dropped: a peer gone without a reset (its host lost, a partition) would otherwise hold every call
 * until its deadline for as long as TCP takes to give up, many minutes.
 */
const defaultPingTimeoutMs = 2_000;
/** The longest `grpc-timeout` in milliseconds: the header allows at most 8 digits. */
const maxTimeoutMs = 99_999_999;

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR } =
  http2.constants;

/** What a failed call rejects with: grpc-js's ServiceError shape, which toDomainError reads. */
class CallError extends Error implements grpc.ServiceError {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly metadata: grpc.Metadata = new grpc.Metadata(),
  ) {
    super(`${code} ${grpc.status[code]}: ${details}`);
  }
}

/** A call refused before the server saw it: safe to send again on a fresh session. */
class Refused extends CallError {}

const tracer = trace.getTracer('@costgov/rpc');

export function createUnaryChannel(
  address: string,
  reconnectWaitMs: number,
  { streamsPerSession = defaultStreamsPerSession, pingTimeoutMs = defaultPingTimeoutMs } = {},
): UnaryChannel {
  let session: http2.ClientHttp2Session | undefined;
  let dialing: Promise<http2.ClientHttp2Session> | undefined;
  let failedAt = -Infinity;
  let failure = 'not connected';
  let closed = false;
  /** Calls under way: the session keeps the process alive only while there are some, as grpc-js's does. */
  let active = 0;
  let streams = 0; // sent on the current session

  const usable = (s: http2.ClientHttp2Session | undefined): s is http2.ClientHttp2Session =>
    s !== undefined && !s.closed && !s.destroyed;

  function forget(s: http2.ClientHttp2Session): void {
    if (session === s) session = undefined;
  }

  /** One dial at a time, shared by every call waiting for it. */
  function dial(): Promise<http2.ClientHttp2Session> {
    dialing ??= connect().finally(() => {
      dialing = undefined;
    });
    return dialing;
  }

  function connect(): Promise<http2.ClientHttp2Session> {
    return new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      let s: http2.ClientHttp2Session;
      try {
        s = http2.connect(`http://${authorityOf(address)}`, {
          settings: { enablePush: false, maxHeaderListSize: maxMetadataBytes },
          maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
          // Node's own limit degrades badly when reached; grpc-js lifts it as well.
          maxSessionMemory: Number.MAX_SAFE_INTEGER,
        });
      } catch (error) {
        failedAt = Date.now();
        failure = `cannot reach ${address}: ${(error as Error).message}`;
        reject(new CallError(grpc.status.UNAVAILABLE, failure));
        return;
      }
      const timer = setTimeout(
        () => s.destroy(new Error(`no answer within ${dialTimeoutMs} ms`)),
        dialTimeoutMs,
      );
      let done = false;
      const failed = (error: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        failedAt = Date.now();
        failure = `cannot reach ${address}: ${error.message}`;
        s.destroy();
        reject(new CallError(grpc.status.UNAVAILABLE, failure));
      };
      const closedEarly = () => failed(new Error('the connection closed'));
      s.on('error', failed); // not once: a second error with no listener would end the process
      s.on('close', closedEarly);
      // Ready once the server's settings arrived, as grpc-js waits for them.
      s.once('remoteSettings', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        s.off('error', failed);
        s.off('close', closedEarly);
        if (closed) {
          s.close();
          reject(new CallError(grpc.status.UNAVAILABLE, 'the client was closed'));
          return;
        }
        // Every error of a session must be handled here: an 'error' event without a listener ends the process.
        s.on('error', (error: Error) => {
          failure = `connection to ${address} failed: ${error.message}`;
          forget(s);
        });
        s.on('close', () => forget(s));
        // The server is going away: calls under way finish, new ones go to a new session.
        s.on('goaway', () => {
          forget(s);
          if (!s.closed) s.close();
        });
        if (active === 0) s.unref();
        session = s;
        streams = 0;
        resolve(s);
      });
    });
  }

  const probing = new WeakSet<http2.ClientHttp2Session>();
  /** Drops `s` unless its peer answers a PING in time; one probe per session at a time. */
  function probe(s: http2.ClientHttp2Session): void {
    if (!usable(s) || probing.has(s)) return;
    probing.add(s);
    const drop = (why: string) => {
      forget(s);
      failure = `connection to ${address} dropped: ${why}`;
      s.destroy();
    };
    const timer = setTimeout(() => drop(`no answer to a PING within ${pingTimeoutMs} ms`), pingTimeoutMs);
    timer.unref();
    const answered = (error: Error | null) => {
      clearTimeout(timer);
      probing.delete(s);
      if (error && usable(s)) drop(error.message);
    };
    try {
      if (!s.ping(answered)) answered(null); // too many PINGs unanswered already: leave it to the others
    } catch (error) {
      answered(error as Error); // the session closed meanwhile
    }
  }

  /** The session to send on: the current one, or a dial bounded by the deadline. */
  async function ready(deadline: number): Promise<http2.ClientHttp2Session> {
    if (usable(session) && streams >= streamsPerSession) {
      session.close(); // calls under way finish on it
      session = undefined;
    }
    if (usable(session)) return session;
    if (closed) throw new CallError(grpc.status.UNAVAILABLE, 'the client was closed');
    if (!dialing) {
      // A dial failed a moment ago: wait (briefly) for the next instead of failing every call at once, so
      // the first calls after a backend is back get through; while it stays down they fail fast.
      const wait = failedAt + redialAfterMs - Date.now();
      if (wait > 0) {
        if (Date.now() + wait > Math.min(deadline, Date.now() + reconnectWaitMs))
          throw new CallError(grpc.status.UNAVAILABLE, failure);
        await new Promise((resolve) => setTimeout(resolve, wait));
        if (usable(session)) return session;
      }
    }
    return beforeDeadline(dial(), deadline);
  }

  async function call(method: DescMethodUnary, request: Message, ctx: CallContext, deadline: number) {
    const span = trace.getActiveSpan()?.isRecording() ? clientSpan(method) : undefined;
    active++;
    if (active === 1) session?.ref();
    try {
      const body = toBinary(method.input, request);
      const send = async () => {
        const s = await ready(deadline);
        streams++;
        return exchange(s, method, body, ctx, deadline, span).catch((error: unknown) => {
          if (error instanceof CallError && error.code === grpc.status.DEADLINE_EXCEEDED) probe(s);
          throw error;
        });
      };
      const response = await send().catch((error: unknown) => {
        if (error instanceof Refused && Date.now() < deadline) return send();
        throw error;
      });
      span?.setAttribute('rpc.grpc.status_code', grpc.status.OK);
      return response;
    } catch (error) {
      if (span && error instanceof CallError) {
        span.setAttribute('rpc.grpc.status_code', error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: error.details });
      }
      throw error;
    } finally {
      span?.end();
      active--;
      if (active === 0) session?.unref();
    }
  }

  return {
    call,
    close() {
      closed = true;
      if (session && !session.closed) session.close();
      session = undefined;
    },
  };
}

/** One request and its answer on `session`; settles exactly once, whatever the stream does. */
function exchange(
  session: http2.ClientHttp2Session,
  method: DescMethodUnary,
  body: Uint8Array,
  ctx: CallContext,
  deadline: number,
  span: Span | undefined,
): Promise<Message> {
  return new Promise<Message>((resolve, reject) => {
    const timeoutMs = deadline - Date.now();
    if (timeoutMs <= 0) {
      reject(new CallError(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded'));
      return;
    }
    const headers = {
      ':method': 'POST',
      ':path': `/${method.parent.typeName}/${method.name}`,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(Number.isFinite(timeoutMs)
        ? { 'grpc-timeout': `${Math.min(Math.ceil(timeoutMs), maxTimeoutMs)}m` }
        : {}),
      ...(span
        ? context.with(trace.setSpan(context.active(), span), () => callHeaders(ctx))
        : callHeaders(ctx)),
    };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers);
    } catch (error) {
      // The session closed or received GOAWAY since it was picked: nothing reached the server.
      reject(new Refused(grpc.status.UNAVAILABLE, (error as Error).message));
      return;
    }

    let settled = false;
    const settle = (outcome: Message | CallError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (outcome instanceof CallError) reject(outcome);
      else resolve(outcome);
    };
    const cancel = (error: CallError) => {
      settle(error);
      if (!stream.closed) stream.close(NGHTTP2_CANCEL);
    };
    const timer = afterMs(
      () => cancel(new CallError(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded')),
      timeoutMs,
    );

    let httpStatus = 200;
    let status: http2.IncomingHttpHeaders | undefined; // the headers that carried grpc-status
    let streamError: Error | undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    stream.on('response', (responseHeaders) => {
      httpStatus = Number(responseHeaders[':status']);
      if (responseHeaders['grpc-status'] !== undefined) status = responseHeaders; // trailers-only answer
    });
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxReceiveBytes + 5) {
        cancel(
          new CallError(
            grpc.status.RESOURCE_EXHAUSTED,
            `Received message larger than max (${received} vs. ${maxReceiveBytes})`,
          ),
        );
      } else chunks.push(chunk);
    });
    stream.on('trailers', (trailers) => {
      status = trailers;
    });
    stream.on('error', (error: Error) => {
      streamError = error;
    });
    stream.on('close', () => {
      if (settled) return;
      if (status) {
        if (status[replayedTrailer] === 'true') ctx.replayed = true;
        settle(outcomeOf(method, status, chunks));
      } else settle(closedWithoutStatus(stream, session, httpStatus, streamError));
    });
    stream.end(frame(body));
  });
}

/** A gRPC message on the wire: not compressed (0), its length (4 bytes, big-endian), its bytes. */
function frame(body: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(5 + body.byteLength);
  framed[0] = 0;
  framed.writeUInt32BE(body.byteLength, 1);
  framed.set(body, 5);
  return framed;
}

/** The call's outcome from the headers carrying its status and the data received before them. */
function outcomeOf(
  method: DescMethodUnary,
  status: http2.IncomingHttpHeaders,
  chunks: Buffer[],
): Message | CallError {
  const code = Number(status['grpc-status']);
  if (code !== grpc.status.OK) {
    const code_ = Number.isInteger(code) && code in grpc.status ? (code as grpc.status) : grpc.status.UNKNOWN;
    return new CallError(code_, messageOf(status['grpc-message']), grpc.Metadata.fromHttp2Headers(status));
  }
  const data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  if (data.length < 5 || data[0] !== 0 || data.readUInt32BE(1) !== data.length - 5) {
    return new CallError(grpc.status.INTERNAL, 'The answer is not one uncompressed gRPC message.');
  }
  try {
    return fromBinary(method.output, data.subarray(5));
  } catch (error) {
    return new CallError(grpc.status.INTERNAL, `The answer does not parse: ${(error as Error).message}`);
  }
}

/** grpc-message is percent-encoded; a value that does not decode is shown as it came. */
function messageOf(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A stream that ended without a gRPC status, mapped as grpc-js maps it. */
function closedWithoutStatus(
  stream: http2.ClientHttp2Stream,
  session: http2.ClientHttp2Session,
  httpStatus: number,
  streamError: Error | undefined,
): CallError {
  if (stream.rstCode === NGHTTP2_REFUSED_STREAM)
    return new Refused(grpc.status.UNAVAILABLE, 'Stream refused by server');
  if (httpStatus !== 200) return httpStatusError(httpStatus);
  if (stream.rstCode === NGHTTP2_ENHANCE_YOUR_CALM)
    return new CallError(grpc.status.RESOURCE_EXHAUSTED, 'Bandwidth exhausted or memory limit exceeded');
  // A connection that dropped (a backend killed, a reset) ends its streams with CANCEL or an error.
  if (streamError || stream.rstCode === NGHTTP2_CANCEL || session.destroyed)
    return new CallError(
      grpc.status.UNAVAILABLE,
      `Connection dropped${streamError ? `: ${streamError.message}` : ''}`,
    );
  return new CallError(
    grpc.status.INTERNAL,
    `Received RST_STREAM with code ${stream.rstCode ?? NGHTTP2_NO_ERROR} (Call ended without gRPC status)`,
  );
}

/** An HTTP status other than 200 without a gRPC status (a proxy in between answered), per gRPC's table. */
function httpStatusError(httpStatus: number): CallError {
  const code =
    httpStatus === 400
      ? grpc.status.INTERNAL
      : httpStatus === 401
        ? grpc.status.UNAUTHENTICATED
        : httpStatus === 403
          ? grpc.status.PERMISSION_DENIED
          : httpStatus === 404
            ? grpc.status.UNIMPLEMENTED
            : [429, 502, 503, 504].includes(httpStatus)
              ? grpc.status.UNAVAILABLE
              : grpc.status.UNKNOWN;
  return new CallError(code, `Received HTTP status code ${httpStatus}`);
}

/** 'host:port' of a target, also when written as grpc-js takes it ('dns:///host:port'). */
const authorityOf = (address: string) => address.replace(/^dns:(\/\/[^/]*\/)?/, '');

/**
 * setTimeout for a delay that may be Infinity (no deadline: no timer) or past 2^31 - 1 ms, which
 * setTimeout would fire at once.
 */
function afterMs(fn: () => void, ms: number): NodeJS.Timeout | undefined {
  return Number.isFinite(ms) ? setTimeout(fn, Math.min(ms, 2 ** 31 - 1)) : undefined;
}

function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = afterMs(
      () => reject(new CallError(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded while connecting')),
      Math.max(0, deadline - Date.now()),
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** A CLIENT span named and described as @opentelemetry/instrumentation-grpc names its own. */
function clientSpan(method: DescMethodUnary): Span {
  return tracer.startSpan(`grpc.${method.parent.typeName}/${method.name}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'rpc.system': 'grpc', 'rpc.service': method.parent.typeName, 'rpc.method': method.name },
  });
}
