import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '@costgov/testing';

/*
 * The alert rules (deploy/prometheus/alerts.yaml) and the Grafana dashboard (deploy/grafana/costgov.json)
 * name only metrics the code defines, with labels those metrics have: a renamed metric or label fails
 * here rather than silently leaving an alert that never fires or an empty panel. promtool checks the
 * rules' syntax and behaviour (.ci/run); this checks them against the code.
 */

interface Defined {
  labels: Set<string>;
}

/** Every .ts file under `dir` except tests. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const file = path.join(dir, entry);
    if (entry === 'node_modules' || entry === 'test' || entry === 'dist') return [];
    if (statSync(file).isDirectory()) return sources(file);
    return file.endsWith('.ts') && !file.endsWith('.test.ts') ? [file] : [];
  });
}

/** Metrics the code registers with prom-client (`new Counter({ name: '...', labelNames: [...] })`), series names expanded. */
function definedMetrics(): Map<string, Defined> {
  const defined = new Map<string, Defined>();
  const add = (name: string, type: string, labels: string[]) => {
    const series =
      type === 'Histogram' || type === 'histogram'
        ? [`${name}_bucket`, `${name}_sum`, `${name}_count`]
        : type === 'Summary' || type === 'summary'
          ? [name, `${name}_sum`, `${name}_count`]
          : [name];
    for (const s of series) {
      defined.set(s, { labels: new Set([...labels, ...(s.endsWith('_bucket') ? ['le'] : [])]) });
    }
  };
  const files = ['libs', 'services'].flatMap((top) =>
    readdirSync(path.join(repoRoot, top)).flatMap((pkg) => {
      const src = path.join(repoRoot, top, pkg, 'src');
      return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? sources(src) : [];
    }),
  );
  const definition = /new (Counter|Gauge|Histogram|Summary)(?:<[^>]*>)?\(\{/g;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(definition)) {
      // The options object: up to the next metric (or 2000 characters), which holds its name and labels.
      const rest = text.slice(match.index + match[0].length, match.index + 2000);
      const body = rest.split(/new (?:Counter|Gauge|Histogram|Summary)\b/)[0]!;
      const name = /^\s*name: '([a-z_:]+)'/.exec(body)?.[1];
      if (!name) continue;
      const labelList = /labelNames: \[([^\]]*)\]/.exec(body)?.[1] ?? '';
      add(
        name,
        match[1]!,
        [...labelList.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!),
      );
    }
  }
  // prom-client's process and Node.js metrics, which every process serves.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const metric of registry.getMetricsAsArray()) {
    const { name, type, labelNames } = metric as unknown as {
      name: string;
      type: string;
      labelNames: string[];
    };
    add(name, type, labelNames ?? []);
  }
  return defined;
}

const keywords = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** The metric names a PromQL expression selects, each with the label names its matchers use. */
function selectorsOf(expr: string): Array<{ metric: string; labels: string[] }> {
  const selectors: Array<{ metric: string; labels: string[] }> = [];
  const text = expr
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping label lists
    .replace(/\[[^\]]*\]/g, ' '); // ranges and subqueries ([5m], [$__rate_interval], [15m:1m])
  const token = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?|"(?:[^"\\]|\\.)*"|\{[^}]*\}/g;
  for (const match of text.matchAll(token)) {
    const [, name, matchers, call] = match;
    if (!name || call || keywords.has(name.toLowerCase())) continue; // a function, or not a name
    const unquoted = (matchers ?? '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
    const labels = [...unquoted.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!);
    selectors.push({ metric: name, labels });
  }
  return selectors;
}

interface RuleGroup {
  name: string;
  rules: Array<{ record?: string; alert?: string; expr: string; labels?: Record<string, string> }>;
}

const alerts = parse(readFileSync(path.join(repoRoot, 'deploy/prometheus/alerts.yaml'), 'utf8')) as {
  groups: RuleGroup[];
};
const dashboard = JSON.parse(readFileSync(path.join(repoRoot, 'deploy/grafana/costgov.json'), 'utf8')) as {
  uid: string;
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
};
const rules = alerts.groups.flatMap((group) => group.rules);
const recorded = new Set(rules.flatMap((rule) => (rule.record ? [rule.record] : [])));

function unknownNames(expr: string, defined: Map<string, Defined>): string[] {
  return selectorsOf(expr).flatMap(({ metric, labels }) => {
    if (recorded.has(metric)) return [];
    const known = defined.get(metric);
    if (!known) return [`metric ${metric}`];
    return labels.filter((label) => !known.labels.has(label)).map((label) => `label ${metric}{${label}}`);
  });
}

describe('alert rules and dashboard against the code', () => {
  const defined = definedMetrics();

  it('finds the metrics the code defines, with their labels', () => {
    expect(defined.get('http_server_request_duration_seconds_bucket')?.labels).toEqual(
      new Set(['http_request_method', 'http_route', 'http_response_status_code', 'le']),
    );
    expect(defined.has('outbox_oldest_event_age_seconds')).toBe(true);
    expect(defined.has('webhook_deliveries_total')).toBe(true);
    expect(defined.has('process_resident_memory_bytes')).toBe(true);
    expect(selectorsOf('sum by (a) (rate(x_total{b="1",c=~"2|3"}[5m])) / on (d) y > 0.5')).toEqual([
      { metric: 'x_total', labels: ['b', 'c'] },
      { metric: 'y', labels: [] },
    ]);
    // What a renamed metric or label looks like.
    expect(
      unknownNames('rate(http_server_request_duration_seconds_count{route="/x"}[5m]) + nope_total', defined),
    ).toEqual(['label http_server_request_duration_seconds_count{route}', 'metric nope_total']);
  });

  it('every rule expression names defined metrics and labels; every alert has a severity and a runbook', () => {
    const problems = rules.flatMap((rule) =>
      unknownNames(rule.expr, defined).map((problem) => `${rule.alert ?? rule.record}: ${problem}`),
    );
    expect(problems).toEqual([]);
    const operations = readFileSync(path.join(repoRoot, 'docs/operations.md'), 'utf8');
    const anchors = new Set(
      [...operations.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const rule of rules.filter((r) => r.alert)) {
      const { labels, annotations } = rule as typeof rule & { annotations: Record<string, string> };
      expect(['critical', 'warning', 'info'], rule.alert).toContain(labels?.severity);
      const anchor = /^docs\/operations\.md#(.+)$/.exec(annotations.runbook ?? '')?.[1];
      expect(anchor && anchors.has(anchor), `${rule.alert}: runbook ${annotations.runbook}`).toBe(true);
    }
  });

  it('every dashboard query names defined metrics and labels', () => {
    expect(dashboard.uid).toBe('costgov-overview');
    const queries = dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
    );
    expect(queries.length).toBeGreaterThan(10);
    const problems = queries.flatMap(({ panel, expr }) =>
      unknownNames(expr, defined).map((problem) => `${panel}: ${problem}`),
    );
    expect(problems).toEqual([]);
    // Each group of metrics the issue names has a panel.
    const all = queries.map((q) => q.expr).join('\n');
    for (const metric of [
      'http_server_request_duration_seconds_count',
      'rpc_server_call_duration_seconds_count',
      'outbox_events_pending',
      'outbox_oldest_event_age_seconds',
      'messaging_consumer_lag_messages',
      'messaging_consumer_redeliveries_total',
      'webhook_deliveries_total',
    ]) {
      expect(all).toContain(metric);
    }
  });
});
