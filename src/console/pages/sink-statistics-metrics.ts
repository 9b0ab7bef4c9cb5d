/**
 * Reading a sink's lag out of GET /metrics (the Prometheus text format): a tiny parser of
 * sample lines, and the fetch the statistics page polls. No DOM and no imports: the browser
 * test runs the parser in Node too.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g;

/** A Prometheus sample value: a float, or +Inf, -Inf, NaN. */
function sampleValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** The samples of a text-format scrape; comments (# HELP, # TYPE), blank and unreadable lines are skipped. */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1], labels, value: sampleValue(m[3]) });
  }
  return samples;
}

/** The samples of `name` whose labels include all of `labels`. */
export function samplesOf(samples: Sample[], name: string, labels: Record<string, string>): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

export interface SinkLag {
  /** Records of the source the sink has not mapped yet (summed over the node's series). */
  records: number;
  /** Age of the oldest of them, in seconds (the largest of the node's series). */
  seconds: number;
}

/**
 * The sink's lag in a scrape; undefined when the node has no lag series for it (the sink has no
 * writer on this node: disabled, or another cluster node owns its partitions).
 */
export function sinkLag(text: string, sourceId: string, sinkId: string): SinkLag | undefined {
  const samples = parsePrometheus(text);
  const labels = { source: sourceId, sink: sinkId };
  const records = samplesOf(samples, 'sluice_sink_lag_records', labels);
  const seconds = samplesOf(samples, 'sluice_sink_lag_seconds', labels);
  if (records.length === 0 && seconds.length === 0) return undefined;
  return {
    records: records.reduce((n, s) => n + s.value, 0),
    seconds: seconds.reduce((n, s) => Math.max(n, s.value), 0),
  };
}

/** What a poll of /metrics gave: the lag, no series for the sink, or a server that protects /metrics. */
export type LagReading = { kind: 'lag'; lag: SinkLag } | { kind: 'none' } | { kind: 'protected' } | { kind: 'error'; message: string };

/**
 * GET /metrics with a plain fetch: no Storage API token goes to it (it takes none, and a 401
 * from a server with --metrics-token must not end the console's session as the API client's
 * 401 handling would).
 */
export async function readLag(sourceId: string, sinkId: string, signal?: AbortSignal): Promise<LagReading> {
  const res = await fetch('/metrics', { headers: { Accept: 'text/plain' }, signal, credentials: 'omit' });
  if (res.status === 401 || res.status === 403) return { kind: 'protected' };
  if (!res.ok) return { kind: 'error', message: `GET /metrics answered HTTP ${res.status}.` };
  const lag = sinkLag(await res.text(), sourceId, sinkId);
  return lag ? { kind: 'lag', lag } : { kind: 'none' };
}
