import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** How the receiver answers a request: a status and body, or never (a hung endpoint). */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

/** A local HTTP endpoint that records what it gets and answers as the test says. */
export async function startReceiver(answer: (request: Received) => Answer = () => ({ status: 204 })) {
  const received: Received[] = [];
  const hung = new Set<http.ServerResponse>();
  let respond = answer;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: Received = {
        path: req.url ?? '',
        headers: Object.fromEntries(Object.entries(req.headers).map(([key, value]) => [key, String(value)])),
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(request);
      const reply = respond(request);
      if (reply === 'hang') {
        hung.add(res);
        return;
      }
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    answer(next: (request: Received) => Answer) {
      respond = next;
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
