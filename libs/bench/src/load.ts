/** What every section of the bench shares: settings from the environment, progress lines, autocannon runs. */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { figuresOf, type RunFigures } from './report';

export const progress = (message: string): void => console.error(`[bench] ${message}`);

export function positiveInt(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${name} must be a positive integer, not '${process.env[name]}'`);
  return value;
}

export interface LoadSettings {
  durationSeconds: number;
  warmUpSeconds: number;
}

export interface Target {
  name: string;
  /** Base URL; with `paths` the path of every request is drawn from it, else the URL is requested as is. */
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Called before every request: a different path each time (random users, pages). */
  paths?: () => string;
}

async function load(target: Target, seconds: number, label: string): Promise<autocannon.Result> {
  const { paths } = target;
  const result = await autocannon({
    url: target.url,
    connections: target.connections,
    duration: seconds,
    headers: target.headers,
    ...(paths
      ? { requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths() }) }] }
      : {}),
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${label}: ${result.non2xx} non-2xx responses, ${result.errors} errors, ${result.timeouts} timeouts ` +
        `of ${result.requests.sent} requests (status codes: ${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return result;
}

/** What to watch during a measured run besides the load generator's figures. */
export interface Observe {
  /** Processes whose CPU use is reported, read once the warm-up is over. */
  cpu?: () => Promise<CpuProbe[]>;
  /** Prometheus endpoint of the gateway under load: rate limiter fallbacks and event-loop lag. */
  gatewayMetricsUrl?: string;
}

/**
 * A warm-up (skipped when warmUpSeconds is 0), then the measured run; any answer other than 2xx fails
 * the bench. What `observe` names is measured over the run alone.
 */
export async function measure(
  target: Target,
  settings: LoadSettings,
  observe: Observe = {},
): Promise<RunFigures> {
  if (settings.warmUpSeconds > 0) {
    progress(`warm-up ${target.name} (${settings.warmUpSeconds} s)`);
    await load(target, settings.warmUpSeconds, `${target.name} warm-up`);
  }
  progress(`measuring ${target.name} (${settings.durationSeconds} s, ${target.connections} connections)`);
  const probes = observe.cpu ? await observe.cpu() : [];
  // A scrape also resets the event-loop delay histogram, so the next one covers the run alone.
  const metricsBefore = observe.gatewayMetricsUrl ? await scrape(observe.gatewayMetricsUrl) : undefined;
  const before = probes.map((probe) => probe.snapshot());
  const started = performance.now();
  const result = await load(target, settings.durationSeconds, target.name);
  const elapsed = (performance.now() - started) / 1000;
  const after = probes.map((probe) => probe.snapshot());
  const figures: RunFigures = figuresOf(result);
  if (observe.cpu) {
    figures.cpu = probes.map((probe, i) => {
      // Per process, so that one that ended or started meanwhile does not count (Postgres backends).
      const seconds = before[i]!.reduce((sum, start, j) => {
        const end = after[i]![j]!;
        return Number.isFinite(start) && Number.isFinite(end) ? sum + (end - start) : sum;
      }, 0);
      return { name: probe.name, percent: Math.round((seconds / elapsed) * 100) };
    });
  }
  if (observe.gatewayMetricsUrl && metricsBefore) {
    const metrics = await scrape(observe.gatewayMetricsUrl);
    const delta = (name: string) => (metrics.get(name) ?? 0) - (metricsBefore.get(name) ?? 0);
    figures.gateway = {
      requests: delta('http_server_request_duration_seconds_count'),
      fallbackDecisions: delta(fallbackCounter),
      eventLoopLagP99Ms: (metrics.get('nodejs_eventloop_lag_p99_seconds') ?? Number.NaN) * 1000,
      eventLoopLagMaxMs: (metrics.get('nodejs_eventloop_lag_max_seconds') ?? Number.NaN) * 1000,
    };
  }
  return figures;
}

/** Decisions a limiting gateway took per process because Redis did not answer in time. */
const fallbackCounter = 'ratelimit_fallback_total';

/** A Prometheus text exposition as metric name -> value, summed over labels. */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (name && Number.isFinite(value)) values.set(name, (values.get(name) ?? 0) + value);
  }
  return values;
}

/** Processes whose CPU time can be read: ours (`/proc/<pid>/stat`), or the bench itself. */
export interface CpuProbe {
  name: string;
  /** User + system CPU seconds so far of each process; NaN for one that cannot be read. */
  snapshot(): number[];
}

/** Linux's clock ticks per second (`getconf CLK_TCK`), the unit of utime and stime in /proc/<pid>/stat. */
const clockTicks = 100;

function procSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

/** Several processes (e.g. all Postgres backends of the bench database) counted as one. */
export function processProbe(name: string, pids: number[]): CpuProbe {
  return { name, snapshot: () => pids.map(procSeconds) };
}

export const benchProbe: CpuProbe = {
  name: 'bench (autocannon)',
  snapshot: () => {
    const { user, system } = process.cpuUsage();
    return [(user + system) / 1e6];
  },
};
