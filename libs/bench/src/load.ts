/** What every section of the bench shares: settings from the environment, progress lines, autocannon runs. */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { figuresOf, type CpuShare, type Figures } from './report';

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
    ...(paths ? { requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths() }) }] } : {}),
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${label}: ${result.non2xx} non-2xx responses, ${result.errors} errors, ${result.timeouts} timeouts ` +
        `of ${result.requests.sent} requests (status codes: ${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return result;
}

/**
 * A warm-up, then the measured run; any answer other than 2xx fails the bench. With `cpu`, the CPU each
 * probed process used during the measured run is added, in % of one core.
 */
export async function measure(
  target: Target,
  settings: LoadSettings,
  cpu?: () => Promise<CpuProbe[]>,
): Promise<Figures & { cpu?: CpuShare[] }> {
  progress(`warm-up ${target.name} (${settings.warmUpSeconds} s)`);
  await load(target, settings.warmUpSeconds, `${target.name} warm-up`);
  progress(`measuring ${target.name} (${settings.durationSeconds} s, ${target.connections} connections)`);
  const probes = cpu ? await cpu() : [];
  const before = probes.map((probe) => probe.seconds());
  const started = performance.now();
  const result = await load(target, settings.durationSeconds, target.name);
  const elapsed = (performance.now() - started) / 1000;
  const figures = figuresOf(result);
  if (!cpu) return figures;
  const shares = probes.map((probe, i) => ({
    name: probe.name,
    percent: Math.round(((probe.seconds() - before[i]!) / elapsed) * 100),
  }));
  return { ...figures, cpu: shares };
}

/** A process whose CPU time can be read: one of ours (`/proc/<pid>/stat`), or the bench itself. */
export interface CpuProbe {
  name: string;
  /** User + system CPU seconds so far; NaN when unknown. */
  seconds(): number;
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

/** The CPU time of several processes (e.g. all Postgres backends of the bench database) as one. */
export function processProbe(name: string, pids: number[]): CpuProbe {
  return { name, seconds: () => pids.reduce((sum, pid) => sum + procSeconds(pid), 0) };
}

export const benchProbe: CpuProbe = {
  name: 'bench (autocannon)',
  seconds: () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  },
};
