import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got: the path, the headers and the raw body, as a verifier needs them. */
export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The webhook-id header. */
  id: string;
  receivedAt: number;
}

/** How the receiver answers a request: a status (and optional body), after an optional delay in ms. */
export type Answer = { status: number; body?: string; delayMs?: number };

export interface WebhookReceiver {
  url: (path?: string) => string;
  received: ReceivedDelivery[];
  /** Requests to one path (each webhook of a test gets its own path). */
  at: (path: string) => ReceivedDelivery[];
  /** Requests received and not answered yet. */
  inFlight: () => number;
  close(): Promise<void>;
}

/**
 * A local HTTP endpoint for webhook deliveries on 127.0.0.1. `answer` decides each reply from the
 * request and how many requests that path had before it (0 for the first).
 */
export async function startWebhookReceiver(
  answer: (delivery: ReceivedDelivery, earlier: number) => Answer = () => ({ status: 204 }),
): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  let pending = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      const delivery: ReceivedDelivery = {
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        id: String(req.headers['webhook-id'] ?? ''),
        receivedAt: Date.now(),
      };
      const earlier = received.filter((d) => d.path === path).length;
      received.push(delivery);
      const reply = answer(delivery, earlier);
      pending++;
      const send = () => {
        pending--;
        if (res.destroyed) return;
        res.statusCode = reply.status;
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/') => `http://127.0.0.1:${port}${path}`,
    received,
    at: (path) => received.filter((d) => d.path === path),
    inFlight: () => pending,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
