import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteStreams,
  eventually,
  natsServerBinary,
  realInfra,
  startBackends,
  startGatewayProcess,
  startNatsServer,
  uniqueName,
  type Backends,
  type GatewayProcess,
  type NatsServer,
  type Proc,
  createTestDatabase,
  type TestDatabase,
} from '@costgov/testing';
import { spanKind, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver';
import { focusFile as monthFile } from '@costgov/testing';

/** A FOCUS export of the current month: one row of `cost` USD. */
const focusFile = (cost: number) =>
  monthFile([cost], { service: 'Amazon Elastic Compute Cloud', resourceId: () => 'i-traced' });

/*
 * One REST request that uploads cost data and breaches a budget, followed across processes by the
 * spans every process exports over OTLP/HTTP to a receiver of this test's own: the gateway's HTTP span,
 * its gRPC call to costs, the outbox publish of costs.data.ingested, budgets' consumer (which evaluates
 * and publishes the breach), violations' consumer, which opens the violation and publishes it, and the
 * notifier's consumer of that event and its delivery of the webhook to a receiver of this test.
 *
 * The processes share a bus only through NATS: the real one on the real-infrastructure pass, a private
 * nats-server (with each service on an in-memory PGlite) on the embedded default.
 *
 * The webhook's URL holds tokens in its path and query, and a client puts an API key in a query string:
 * no span of any process may carry any of them (issue 16), and HTTP spans use the stable conventions.
 */

const apiKey = 'cg_live_traceotlpbootstrapkey00000000000';
/**
 * Secrets a caller put in URLs: the webhook's path and query tokens (a Slack-style URL holds one in its
 * path), and an API key sent as a query parameter.
 */
const webhookPathToken = `whpath${randomUUID().replaceAll('-', '')}`;
const webhookToken = `whtoken${randomUUID().replaceAll('-', '')}`;
const misplacedKey = `cg_live_${randomUUID().replaceAll('-', '')}`;
/** Startup of six processes on a loaded two-core machine. */
const slow = 180_000;
const skipReason = realInfra || natsServerBinary() ? undefined : 'nats-server not found';

describe.skipIf(skipReason)(
  `one trace across every process, exported over OTLP${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const procs: Proc[] = [];
    const namespace = uniqueName('traces');
    /** On real infrastructure; on the embedded default each process has a PGlite in memory. */
    let database: TestDatabase | undefined;
    let receiver: OtlpReceiver;
    let nats: NatsServer | undefined;
    let natsUrl = '';
    let url = '';
    let backends: Backends;
    let gateway: GatewayProcess;
    /** The webhook receiver: every request it got, with its traceparent header. */
    const webhookRequests: Array<{ traceparent?: string; body: string }> = [];
    const webhookReceiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        webhookRequests.push({ traceparent: req.headers.traceparent as string | undefined, body });
        res.statusCode = 204;
        res.end();
      });
    });

    async function call(method: string, path: string, body?: unknown) {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      const reply = { status: response.status, body: text ? JSON.parse(text) : undefined };
      expect(reply.status, `${method} ${path}: ${text}`).toBeLessThan(300);
      return reply.body.data;
    }

    beforeAll(async () => {
      receiver = await startOtlpReceiver();
      await new Promise<void>((resolve) => webhookReceiver.listen(0, '127.0.0.1', resolve));
      if (process.env.NATS_URL) natsUrl = process.env.NATS_URL;
      else {
        nats = await startNatsServer();
        natsUrl = nats.url;
      }
      if (process.env.DATABASE_URL) database = await createTestDatabase('trace_otlp');
      const storage = database ? { DATABASE_URL: database.url } : { DATA_DIR: 'memory' };
      backends = await startBackends(
        {
          ...storage,
          NATS_URL: natsUrl,
          EVENT_NAMESPACE: namespace,
          GUARD_BOOTSTRAP_API_KEY: apiKey,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          OTEL_BSP_SCHEDULE_DELAY: '100',
          // The webhook receiver listens on loopback, which the notifier refuses by default (SSRF).
          WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        },
        procs,
      );
      gateway = await startGatewayProcess('gateway', backends, {}, procs);
      url = gateway.url;
    }, 2 * slow); // seven processes (each with its own PGlite on the embedded default) on a loaded machine

    afterAll(async () => {
      await Promise.all(procs.map((proc) => proc.stop()));
      await receiver?.close();
      webhookReceiver.closeAllConnections();
      await new Promise((resolve) => webhookReceiver.close(resolve));
      await database?.drop();
      if (nats) await nats.close();
      else if (natsUrl) await deleteStreams(natsUrl, namespace);
    }, 60_000);

    it(
      'links the HTTP span, gRPC, outbox publishes, the consumers in budgets, violations and notifier, and the webhook delivery',
      async () => {
        const { port } = webhookReceiver.address() as AddressInfo;
        await call('POST', '/v1/guard/webhooks', {
          url: `http://127.0.0.1:${port}/hooks/${webhookPathToken}?token=${webhookToken}`,
          events: ['violations.*'],
          description: 'trace test',
        });
        const connection = await call('POST', '/v1/guard/connections', { name: 'traced', provider: 'aws' });
        const project = await call('POST', '/v1/guard/projects', {
          name: 'traced',
          connection_ids: [connection.id],
        });
        const budget = await call('POST', '/v1/guard/budgets', {
          project_id: project.id,
          name: 'traced monthly',
          amount: 100,
          currency: 'USD',
          period: 'monthly',
          thresholds: [100],
        });

        const upload = await fetch(`${url}/v1/guard/connections/${connection.id}/cost-data`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'text/csv' },
          body: focusFile(150),
        });
        expect(upload.status, await upload.clone().text()).toBe(200);
        await eventually(async () => {
          const violations = await call('GET', `/v1/guard/violations?budget_id=${budget.id}`);
          return violations.length === 1 ? true : undefined;
        }, slow);
        const delivered = await eventually(
          () => webhookRequests.find((request) => request.body.includes('violations.violation.created')),
          slow,
        );

        // The upload's trace is the one whose gateway span served the upload's path.
        const root = await eventually(() =>
          receiver.spans.find(
            (span) =>
              span.service === 'gateway' &&
              span.kind === spanKind.server &&
              span.attributes['url.path'] === `/v1/guard/connections/${connection.id}/cost-data`,
          ),
        );
        // Each process exports on its own schedule: wait until the spans asserted below and every parent
        // they name have arrived (on a timeout the assertions below say what is missing).
        const wanted = [
          ['violations', spanKind.consumer, 'consume budgets.budget.breached'],
          ['violations', spanKind.producer, 'publish violations.violation.created'],
          ['notifier', spanKind.consumer, 'consume violations.violation.created'],
          ['notifier', spanKind.client, 'webhook deliver'],
        ] as const;
        const snapshot = () => {
          const trace = receiver.spans.filter((span) => span.traceId === root.traceId);
          const ids = new Set(trace.map((span) => span.spanId));
          const complete =
            wanted.every(([service, kind, name]) =>
              trace.some((s) => s.service === service && s.kind === kind && s.name === name),
            ) && trace.every((span) => span === root || ids.has(span.parentSpanId!));
          return { trace, complete };
        };
        await eventually(() => (snapshot().complete ? true : undefined), slow).catch(() => undefined);
        const { trace } = snapshot();
        const byId = new Map(trace.map((span) => [span.spanId, span]));
        const find = (service: string, kind: number, name: string) =>
          trace.find((span) => span.service === service && span.kind === kind && span.name === name);
        const describeTrace = () =>
          trace.map((s) => `${s.service} ${s.kind} ${s.name} ${s.spanId} <- ${s.parentSpanId}`).join('\n');

        // The root is the gateway's HTTP span; every other span's parent was exported in the same trace.
        expect(root.parentSpanId, describeTrace()).toBeUndefined();
        // Named by the gateway after its route template (no express instrumentation), as the conventions say.
        expect(root.name).toBe('POST /v1/guard/connections/:id/cost-data');
        expect(root.attributes['http.route']).toBe('/v1/guard/connections/:id/cost-data');
        for (const span of trace) {
          if (span !== root) expect(byId.has(span.parentSpanId!), describeTrace()).toBe(true);
        }
        for (const [service, kind, name] of wanted) {
          expect(find(service, kind, name), `${service} ${name} in\n${describeTrace()}`).toBeDefined();
        }
        // violations consumed the breach that budgets published.
        const breachConsumed = find('violations', spanKind.consumer, 'consume budgets.budget.breached')!;
        expect(byId.get(breachConsumed.parentSpanId!)).toMatchObject({
          service: 'budgets',
          kind: spanKind.producer,
          name: 'publish budgets.budget.breached',
        });

        // The chain from the webhook delivery up to the HTTP span, each hop as the design has it.
        const chain: ReceivedSpan[] = [];
        const delivery = find('notifier', spanKind.client, 'webhook deliver');
        for (let span = delivery; span; span = span.parentSpanId ? byId.get(span.parentSpanId) : undefined) {
          chain.unshift(span);
        }
        expect(chain[0], describeTrace()).toBe(root);
        const upload_ = 'grpc.costgov.costs.v1.CostDataService/UploadCostData';
        const hops: Array<[string, number, RegExp]> = [
          ['gateway', spanKind.server, /^POST \/v1\/guard\/connections\/:id\/cost-data$/],
          ['gateway', spanKind.client, new RegExp(`^${upload_}$`)],
          ['costs', spanKind.server, new RegExp(`^${upload_}$`)],
          ['costs', spanKind.producer, /^publish costs\.data\.ingested$/],
          ['budgets', spanKind.consumer, /^consume costs\.data\.ingested$/],
          ['budgets', spanKind.producer, /^publish budgets\.budget\.(threshold_crossed|breached)$/],
          ['violations', spanKind.consumer, /^consume budgets\.budget\.(threshold_crossed|breached)$/],
          ['violations', spanKind.producer, /^publish violations\.violation\.created$/],
          ['notifier', spanKind.consumer, /^consume violations\.violation\.created$/],
          ['notifier', spanKind.client, /^webhook deliver$/],
        ];
        // Spans of other instrumentation (database queries) may sit between the hops; the hops keep order.
        let at = 0;
        for (const [service, kind, name] of hops) {
          const found = chain.findIndex(
            (span, index) =>
              index >= at && span.service === service && span.kind === kind && name.test(span.name),
          );
          expect(found, `${service} ${kind} ${name} in\n${describeTrace()}`).toBeGreaterThanOrEqual(at);
          at = found + 1;
        }
        // The receiver was called within the trace too (the HTTP client span passes it on).
        expect(delivered.traceparent?.split('-')[1]).toBe(root.traceId);
        expect(receiver.rejected).toEqual([]);
      },
      2 * slow,
    );

    it(
      'exports no URL query value or credential from any process, and names HTTP spans by the stable conventions',
      async () => {
        // A client that puts a key in the query string (refused: the gateway knows no such parameter), and
        // a list with a filter; both spans are exported all the same.
        const misplaced = await fetch(`${url}/v1/guard/projects?api_key=${misplacedKey}`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        expect(misplaced.status).toBe(400);
        await call('GET', '/v1/guard/projects?status=active');
        await call('GET', '/v1/guard/rules'); // the scanner's turn
        // Userinfo in a webhook URL is refused at registration, so no delivery can carry it.
        const withCredentials = await fetch(`${url}/v1/guard/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            url: 'http://hook-user:hook-pa55@127.0.0.1:9/hooks',
            events: ['violations.*'],
          }),
        });
        expect(withCredentials.status).toBe(422);

        const gatewaySpan = (query: string) =>
          receiver.spans.find(
            (span) =>
              span.service === 'gateway' &&
              span.kind === spanKind.server &&
              span.attributes['url.path'] === '/v1/guard/projects' &&
              String(span.attributes['url.query']).startsWith(query),
          );
        const [withKey, listed] = await Promise.all([
          eventually(() => gatewaySpan('api_key=')),
          eventually(() => gatewaySpan('status=')),
        ]);
        // The delivery's span (the first test waited for the webhook) has come in too.
        const delivery = await eventually(() =>
          receiver.spans.find((span) => span.service === 'notifier' && span.name === 'webhook deliver'),
        );
        await eventually(() => receiver.spans.find((span) => span.service === 'scanner'));

        // Parameter names stay, values go: the query of a request is the caller's, not ours to keep.
        expect(withKey.attributes['url.query']).toBe('api_key=REDACTED');
        expect(listed.attributes['url.query']).toBe('status=REDACTED');
        expect(listed).toMatchObject({
          name: 'GET /v1/guard/projects',
          attributes: expect.objectContaining({
            'http.request.method': 'GET',
            'http.route': '/v1/guard/projects',
            'http.response.status_code': 200,
            'url.scheme': 'http',
            'url.path': '/v1/guard/projects',
            'server.address': '127.0.0.1',
            'server.port': Number(new URL(url).port),
          }),
        });
        // The webhook's attempt shows where it went, not the URL: no path, no query.
        expect(delivery.attributes).toMatchObject({
          'http.request.method': 'POST',
          'url.scheme': 'http',
          'server.address': '127.0.0.1',
          'http.response.status_code': 204,
        });
        expect(
          Object.keys(delivery.attributes).filter((key) => key.startsWith('url.') && key !== 'url.scheme'),
        ).toEqual([]);

        // No span of any process, in any attribute, event or status, holds a secret; none uses the old names.
        const services = new Set(receiver.spans.map((span) => span.service));
        expect([...services]).toEqual(
          expect.arrayContaining([
            'gateway',
            'identity',
            'costs',
            'budgets',
            'violations',
            'scanner',
            'notifier',
          ]),
        );
        const leaks = receiver.spans.filter((span) =>
          [webhookPathToken, webhookToken, misplacedKey, 'hook-pa55'].some((secret) =>
            span.text.includes(secret),
          ),
        );
        expect(leaks.map((span) => `${span.service} ${span.name}: ${span.text}`)).toEqual([]);
        const oldNames = /^(http\.(method|url|target|status_code|host|scheme|flavor|user_agent)|net\.)/;
        const old = receiver.spans.flatMap((span) =>
          Object.keys(span.attributes)
            .filter((key) => oldNames.test(key))
            .map((key) => `${span.service} ${span.name}: ${key}`),
        );
        expect([...new Set(old)]).toEqual([]);
      },
      slow,
    );

    it(
      'serves on each process only the metrics it records, with the real consumer names',
      async () => {
        await call('GET', '/v1/guard/rules'); // every backend has now answered a call, the scanner too
        const scrape = async (metricsUrl: string) => (await fetch(metricsUrl)).text();
        const families = (text: string) =>
          new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!));
        const metricsUrls = { ...backends.metricsUrls, gateway: gateway.metricsUrl };
        const served: Record<string, Set<string>> = {};
        for (const [name, metricsUrl] of Object.entries(metricsUrls))
          served[name] = families(await scrape(metricsUrl));
        const owned: Record<string, string[]> = {
          gateway: ['http_server_request_duration_seconds'],
          budgets: ['budget_evaluations_total', 'budgets_project_reads_total'],
          notifier: ['webhook_deliveries_total', 'webhook_delivery_duration_seconds'],
        };
        for (const [name, families_] of Object.entries(served)) {
          for (const [owner, metrics] of Object.entries(owned)) {
            for (const metric of metrics) {
              expect(families_.has(metric), `${name} serves ${metric}`).toBe(name === owner);
            }
          }
          // Every backend serves gRPC (each answered a call by now); the gateway serves none.
          expect(families_.has('rpc_server_call_duration_seconds'), `${name} serves gRPC`).toBe(
            name !== 'gateway',
          );
          expect(families_.has('outbox_events_pending'), `${name} has an outbox`).toBe(name !== 'gateway');
        }
        // The lag of budgets' durable under the name NATS gives its consumer.
        const budgets = await scrape(backends.metricsUrls.budgets!);
        expect(budgets).toMatch(
          new RegExp(
            `^messaging_consumer_lag_messages\\{messaging_system="nats",messaging_consumer_group_name="${namespace}_budgets_spend_changed"\\} \\d+$`,
            'm',
          ),
        );
      },
      slow,
    );
  },
);
