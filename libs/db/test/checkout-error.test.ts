import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import { openDb, type Db } from '../src';

/** One protocol message: a type byte, its length (itself included) and its body. */
function message(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const cstring = (text: string) => Buffer.from(`${text}\0`, 'utf8');
const authenticationOk = message('R', Buffer.from([0, 0, 0, 0]));
const readyForQuery = message('Z', Buffer.from('I', 'latin1'));
const commandComplete = message('C', cstring('SELECT 0'));
const postmasterExit = message(
  'E',
  Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to unexpected postmaster exit'],
    ].map(([field, value]) => Buffer.concat([Buffer.from(field!, 'latin1'), cstring(value!)])),
    Buffer.from([0]),
  ]),
);

/**
 * A server speaking just enough of the Postgres protocol for node-postgres: trust authentication and
 * simple queries. On the connection's query named `fatal`, it answers the query and, in the same
 * write, a FATAL 57P01 (what a backend sends when its postmaster dies while it waits for the next
 * command), then closes: the driver reads both from one chunk, one synchronous pass.
 */
function startFakePostgres(): Promise<Server> {
  const server = createServer((socket: Socket) => {
    let buffer = Buffer.alloc(0);
    let started = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          if (buffer.length < 4) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          buffer = buffer.subarray(length);
          started = true;
          socket.write(Buffer.concat([authenticationOk, readyForQuery]));
          continue;
        }
        if (buffer.length < 5) return;
        const type = String.fromCharCode(buffer[0]!);
        const length = buffer.readInt32BE(1);
        if (buffer.length < length + 1) return;
        const body = buffer.subarray(5, length + 1).toString('utf8');
        buffer = buffer.subarray(length + 1);
        if (type === 'X') return void socket.end();
        if (type !== 'Q') continue;
        if (body.includes('fatal')) {
          socket.end(Buffer.concat([commandComplete, readyForQuery, postmasterExit]));
          return;
        }
        socket.write(Buffer.concat([commandComplete, readyForQuery]));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('a pooled connection that fails as it is handed to a waiting transaction', () => {
  let server: Server;
  let db: Db;
  // An unhandled 'error' event on a connection ends a real process; under vitest it is an uncaught exception.
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);

  beforeAll(async () => {
    process.on('uncaughtException', onUncaught);
    server = await startFakePostgres();
    const { port } = server.address() as AddressInfo;
    db = await openDb({
      service: 'fake',
      databaseUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
      maxConnections: 1,
      connectTimeoutMs: 1_000,
    });
  });

  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await db?.close().catch(() => undefined);
    await new Promise((resolve) => server?.close(resolve));
  });

  it('fails the transaction as unavailable and ends nothing', async () => {
    // The pool's one connection answers the query; its release hands it to the waiting transaction
    // while the FATAL that follows in the same chunk is still being read.
    const answered = db.query('SELECT 1 AS fatal');
    const waiting = db.transaction((tx) => tx.query('SELECT 2'));
    await expect(answered).resolves.toMatchObject({ rowCount: 0 });
    await expect(waiting).rejects.toBeInstanceOf(UnavailableError);
    expect(uncaught).toEqual([]);
    // The broken connection left the pool: a new one answers.
    await expect(db.query('SELECT 3')).resolves.toMatchObject({ rowCount: 0 });
  });
});
