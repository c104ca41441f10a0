import type { Request, RequestHandler, Response } from 'express';
import { activeTraceIds, type Logger } from '@costgov/log';
import { serverSpanRouteNamer } from '@costgov/telemetry';

const probes = new Set(['/healthz', '/readyz']);
const startOf = Symbol('accessLogStart');

/** What the listener needs of its request, kept on the response: no closure per request. */
type Observed = Response & {
  [startOf]?: {
    at: number;
    logged: boolean;
    ids: { trace_id: string; span_id: string } | undefined;
    /** Names the request's HTTP server span after its route (only when spans are recorded). */
    nameSpan: ((route: string) => void) | undefined;
  };
};

/** What a finished response is measured by (the gateway's request duration histogram). */
export type ObserveRequest = (
  labels: { method: string; route: string; status: number },
  seconds: number,
) => void;

/** The route template, as OpenTelemetry's http.route: a router's root is its mount path, with no trailing '/'. */
const routeOf = (base: string, path: string) => (base !== '' && path === '/' ? base : `${base}${path}`);

/**
 * One JSON line per request once its response is finished (or the client went away, status 499): request
 * id, trace id, method, route pattern (not the URL: no ids or query values), status, duration and team.
 * The same route names the request's HTTP server span.
 * Headers are not logged, so no credential can reach the log. Probes are left out of the log, not out
 * of `observe`, which gets every finished response from the same listener.
 *
 * Written by the process's logger from `res` events rather than by pino-http, whose child logger and
 * serializers per request cost about a tenth of the gateway's CPU on the hot path (issue 7's profile).
 */
export function accessLog(logger: Logger, observe?: ObserveRequest): RequestHandler {
  /** Runs once per response (`this`), on finish or on close without finish. */
  function done(this: Observed): void {
    const started = this[startOf];
    if (!started) return;
    this[startOf] = undefined;
    this.removeListener('finish', done);
    this.removeListener('close', done);
    const req = this.req as Request;
    const finished = this.writableFinished;
    const status = finished ? this.statusCode : 499;
    const route = req.route ? routeOf(req.baseUrl, req.route.path as string) : 'unmatched';
    // Before 'close', when the HTTP instrumentation ends the span: `POST /v1/guard/budgets`, with
    // http.route (there is no express instrumentation). An unmatched request keeps the bare method.
    if (req.route) started.nameSpan?.(route);
    const ms = performance.now() - started.at;
    if (finished) observe?.({ method: req.method, route, status }, ms / 1000);
    if (!started.logged) return;
    const fields = {
      // Every context field is set, even when absent, so that a line never takes another request's.
      request_id: req.requestId,
      trace_id: started.ids?.trace_id,
      span_id: started.ids?.span_id,
      method: req.method,
      route,
      status,
      duration_ms: Math.round(ms),
      team_id: req.principal?.teamId,
    };
    // A client that went away (499) is not the server's failure: info, as for any answer below 500.
    if (status >= 500) logger.error(fields, 'request');
    else logger.info(fields, 'request');
  }

  return (req, res, next) => {
    const logged = !probes.has(req.url);
    // Taken now: when the response finishes, the request's trace may no longer be the active one.
    (res as Observed)[startOf] = {
      at: performance.now(),
      logged,
      ids: logged ? activeTraceIds() : undefined,
      nameSpan: serverSpanRouteNamer(),
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
