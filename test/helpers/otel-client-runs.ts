/**
 * The tests with the real OpenTelemetry clients, once per transport (otel-clients-http.test.ts,
 * otel-clients-grpc.test.ts): telemetrygen's three signals sent straight to Sluice, a wrong secret
 * refused, and the Collector forwarding what telemetrygen sent to its receiver through its
 * exporter of that transport; every record sent must be a row of its default table.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type ChildService } from './child-service.js';
import { CollectorProcess, ensureOtelTools, noteSkipped, OTEL_TOOLS_TIMEOUT_MS, runTelemetrygen, type OtelTools } from './otel-tools.js';
import { otlpSourceWithTables, rowsOfService, startOtlpChild, type OtlpChild, type OtlpSource } from './otlp-child.js';

export interface Sent {
  logs: number;
  spans: number;
  dataPoints: number;
  /** The body of every log record. */
  body: string;
}

const WORKERS = 2;
const LOGS_PER_WORKER = 25;
const TRACES_PER_WORKER = 5;
/** telemetrygen's traces: a parent span and this many children each. */
const CHILD_SPANS = 1;
const METRICS_PER_WORKER = 15;

export interface TelemetrygenTarget {
  /** host:port. */
  endpoint: string;
  /** OTLP/HTTP with this path before /v1/<signal>; without it, OTLP/gRPC. */
  http?: { pathPrefix: string };
  /** Sent as `authorization: Bearer <secret>` (a header on HTTP, metadata on gRPC). */
  secret?: string;
  /** The resource's service.name, which tells this run's rows apart. */
  service: string;
}

/** Runs telemetrygen logs, traces and metrics (unthrottled, two workers) one after the other; each must exit 0. */
export async function telemetrygenRuns(tools: OtelTools, target: TelemetrygenTarget): Promise<Sent> {
  const body = `order placed by ${target.service}`;
  const common = (signal: string): string[] => [
    '--otlp-endpoint', target.endpoint,
    '--otlp-insecure',
    '--service', target.service,
    '--workers', String(WORKERS),
    '--rate', '0',
    ...(target.http ? ['--otlp-http', '--otlp-http-url-path', `${target.http.pathPrefix}/v1/${signal}`] : []),
    // telemetrygen reads key="value" (the inner quotes are its syntax, not a shell's).
    ...(target.secret ? ['--otlp-header', `authorization="Bearer ${target.secret}"`] : []),
  ];
  const runs: Array<[string, string[]]> = [
    ['logs', [...common('logs'), '--logs', String(LOGS_PER_WORKER), '--body', body, '--severity-text', 'Warn', '--severity-number', '13']],
    ['traces', [...common('traces'), '--traces', String(TRACES_PER_WORKER), '--child-spans', String(CHILD_SPANS)]],
    ['metrics', [...common('metrics'), '--metrics', String(METRICS_PER_WORKER), '--metric-type', 'Sum', '--otlp-metric-name', 'orders']],
  ];
  for (const [signal, args] of runs) {
    const run = await runTelemetrygen(tools, [signal, ...args]);
    expect(run.code, `telemetrygen ${signal}: ${run.output.slice(-3000)}`).toBe(0);
  }
  return {
    logs: WORKERS * LOGS_PER_WORKER,
    spans: WORKERS * TRACES_PER_WORKER * (1 + CHILD_SPANS),
    dataPoints: WORKERS * METRICS_PER_WORKER,
    body,
  };
}

/** Every record of `sent` is a row of its signal's default table, with telemetrygen's values. */
export async function expectRecordsOfEachSignal(svc: ChildService, source: OtlpSource, service: string, sent: Sent): Promise<void> {
  const bucket = `in.c-${source.sourceId}`;
  const logs = await rowsOfService(svc, `${bucket}.logs`, service, sent.logs);
  expect(logs).toHaveLength(sent.logs);
  for (const row of logs) {
    expect(row).toMatchObject({ body: sent.body, severity_text: 'Warn', severity_number: '13' });
    expect(row.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  }

  const spans = await rowsOfService(svc, `${bucket}.traces`, service, sent.spans);
  expect(spans).toHaveLength(sent.spans);
  // Each trace: one root span and its children, under the root's trace id.
  const roots = spans.filter((s) => s.parent_span_id === '');
  expect(roots).toHaveLength(sent.spans / (1 + CHILD_SPANS));
  for (const span of spans) {
    expect(span.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(span.span_id).toMatch(/^[0-9a-f]{16}$/);
  }
  expect(new Set(spans.map((s) => s.span_id)).size).toBe(sent.spans);

  const points = await rowsOfService(svc, `${bucket}.metrics`, service, sent.dataPoints);
  expect(points).toHaveLength(sent.dataPoints);
  for (const point of points) expect(point).toMatchObject({ metric_name: 'orders', metric_type: 'sum' });
}

/**
 * The Collector configuration of docs/otlp.md (section "The OpenTelemetry Collector and
 * telemetrygen"), as written: the tests run it, with `collectorOverrides` merged on top.
 */
export function readmeCollectorConfig(): string {
  const readme = readFileSync(resolve('docs/otlp.md'), 'utf8');
  const section = readme.indexOf('### The OpenTelemetry Collector and telemetrygen');
  if (section < 0) throw new Error('docs/otlp.md has no section "The OpenTelemetry Collector and telemetrygen"');
  const block = /```yaml\n([\s\S]*?)```/.exec(readme.slice(section));
  if (!block) throw new Error('the docs/otlp.md section has no yaml block');
  return block[1];
}

/**
 * What a test changes in docs/otlp.md's configuration: its receiver's ports (free ones), the
 * exporter's endpoint (the test's server), the exporter every pipeline uses, a short batch
 * timeout (a test waits less), and no telemetry of its own (its :8888 listener would clash with
 * another Collector on the machine).
 */
export function collectorOverrides(o: { receiverGrpc: string; receiverHttp: string; exporter: string; endpoint: string }): object {
  const pipeline = { exporters: [o.exporter] };
  return {
    receivers: { otlp: { protocols: { grpc: { endpoint: o.receiverGrpc }, http: { endpoint: o.receiverHttp } } } },
    processors: { batch: { timeout: '200ms' } },
    exporters: { [o.exporter]: { endpoint: o.endpoint } },
    service: { telemetry: { metrics: { level: 'none' } }, pipelines: { logs: pipeline, metrics: pipeline, traces: pipeline } },
  };
}

/** The headers a record of the source's log keeps (GET .../records), by lower-case name. */
export function recordHeaders(record: { headers: Record<string, string | string[]> }): Record<string, string> {
  return Object.fromEntries(Object.entries(record.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : v]));
}

export interface Transport {
  name: 'HTTP' | 'gRPC';
  /** Where telemetrygen reaches Sluice, for a source. */
  telemetrygenTarget(sluice: OtlpChild, source: OtlpSource): Pick<TelemetrygenTarget, 'endpoint' | 'http'>;
  /** What telemetrygen prints when Sluice refuses a wrong secret. */
  refusal: RegExp;
  /** The docs configuration's exporter to Sluice over this transport, and its endpoint for a source. */
  exporter: string;
  exporterEndpoint(sluice: OtlpChild, source: OtlpSource): string;
  /** More checks on the newest record's headers, by the client that sent it. */
  headerChecks?: { telemetrygen(headers: Record<string, string>): void; collector(headers: Record<string, string>): void };
}

/** The suite of the real clients against a real `sluice serve` over one transport; skipped with a line without Go. */
export function describeRealClients(file: string, transport: Transport): void {
  const t = transport.name.toLowerCase();
  let tools: OtelTools | undefined;
  let skipReason = '';
  let sluice: OtlpChild | undefined;
  let collector: CollectorProcess | undefined;

  beforeAll(async () => {
    const answer = await ensureOtelTools();
    if ('skip' in answer) {
      skipReason = answer.skip;
      noteSkipped(file, skipReason);
      return;
    }
    tools = answer.tools;
    sluice = await startOtlpChild({ grpc: transport.name === 'gRPC' });
  }, OTEL_TOOLS_TIMEOUT_MS);
  afterAll(async () => {
    await collector?.stop();
    await sluice?.close();
  });

  const newestHeaders = async (source: OtlpSource) =>
    recordHeaders((await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records?limit=1`)).json.records[0]);

  describe(`telemetrygen over OTLP/${transport.name}`, () => {
    it('sends logs, traces and metrics with the secret as `authorization: Bearer`; every record lands in its table', async (ctx) => {
      ctx.skip(!tools, skipReason);
      const source = await otlpSourceWithTables(sluice!.svc, `telemetrygen-${t}`);
      const service = `tg-${t}`;
      const sent = await telemetrygenRuns(tools!, { ...transport.telemetrygenTarget(sluice!, source), secret: source.secret, service });
      await expectRecordsOfEachSignal(sluice!.svc, source, service, sent);
      transport.headerChecks?.telemetrygen(await newestHeaders(source));
    }, 120_000);

    it('is refused with a wrong secret: telemetrygen fails, nothing is stored', async (ctx) => {
      ctx.skip(!tools, skipReason);
      const source = await otlpSourceWithTables(sluice!.svc, `telemetrygen-${t}-refused`);
      const wrong = { ...transport.telemetrygenTarget(sluice!, source), secret: `${source.secret}x`, service: 'tg-refused' };
      await expect(telemetrygenRuns(tools!, wrong)).rejects.toThrow(transport.refusal);
      const records = await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records`);
      expect(records.json.records).toEqual([]);
    }, 120_000);
  });

  describe(`the OpenTelemetry Collector's OTLP/${transport.name} exporter, configured as docs/otlp.md says`, () => {
    it('forwards what telemetrygen sent to its otlp receiver, gzipped, with the secret as `authorization: Bearer`; every record lands in its table', async (ctx) => {
      ctx.skip(!tools, skipReason);
      const source = await otlpSourceWithTables(sluice!.svc, `collector-${t}`);
      const receiver = `127.0.0.1:${await freePort()}`;
      const overrides = collectorOverrides({
        receiverGrpc: receiver,
        receiverHttp: `127.0.0.1:${await freePort()}`,
        exporter: transport.exporter,
        endpoint: transport.exporterEndpoint(sluice!, source),
      });
      collector = await CollectorProcess.start(tools!, [readmeCollectorConfig(), overrides], { SLUICE_OTLP_SECRET: source.secret });
      // telemetrygen speaks gRPC to the Collector's receiver; the Collector speaks the transport to Sluice.
      const service = `via-collector-${t}`;
      const sent = await telemetrygenRuns(tools!, { endpoint: receiver, service });
      await expectRecordsOfEachSignal(sluice!.svc, source, service, sent);
      transport.headerChecks?.collector(await newestHeaders(source));
      // The secret travelled as a header: it is in none of the Collector's own log lines.
      expect(collector.logs()).not.toContain(source.secret);
    }, 120_000);
  });
}
