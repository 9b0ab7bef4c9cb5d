/**
 * Two real OTLP/HTTP clients nobody here wrote, against a real `sluice serve`: the Collector
 * project's load generator telemetrygen, and the OpenTelemetry Collector's `otlp_http` exporter
 * (gzip by default) forwarding what telemetrygen sent to the Collector's otlp receiver. Both carry
 * the source's secret as `Authorization: Bearer`; their records land in the default sinks' tables.
 * The binaries come from scripts/build-otel-tools.sh (test/helpers/otel-tools.ts); without Go
 * these tests are skipped with a line saying so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/child-service.js';
import { CollectorProcess, ensureOtelTools, noteSkipped, OTEL_TOOLS_TIMEOUT_MS, type OtelTools } from '../helpers/otel-tools.js';
import { otlpSourceWithTables, startOtlpChild, type OtlpChild, type OtlpSource } from '../helpers/otlp-child.js';
import { collectorConfig, expectRecordsOfEachSignal, recordHeaders, telemetrygenRuns } from '../helpers/otel-client-runs.js';

let tools: OtelTools | undefined;
let skipReason = '';
let sluice: OtlpChild | undefined;

beforeAll(async () => {
  const answer = await ensureOtelTools();
  if ('skip' in answer) {
    skipReason = answer.skip;
    noteSkipped('otel-clients-http.test.ts', skipReason);
    return;
  }
  tools = answer.tools;
  sluice = await startOtlpChild({ grpc: false });
}, OTEL_TOOLS_TIMEOUT_MS);

afterAll(async () => {
  await sluice?.close();
});

describe('telemetrygen over OTLP/HTTP', () => {
  it('sends logs, traces and metrics with the secret in the Authorization header; every record lands in its table', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source = await otlpSourceWithTables(sluice!.svc, 'telemetrygen-http');
    const sent = await telemetrygenRuns(tools!, {
      endpoint: sluice!.httpEndpoint,
      http: { pathPrefix: source.basePath },
      secret: source.secret,
      service: 'tg-http',
    });
    await expectRecordsOfEachSignal(sluice!.svc, source, 'tg-http', sent);
    const recent = await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records?limit=1`);
    const headers = recordHeaders(recent.json.records[0]);
    expect(headers['content-type']).toBe('application/x-protobuf');
    expect(headers['user-agent']).toMatch(/^OTel Go OTLP over HTTP\/protobuf /);
  }, 120_000);

  it('is refused with a wrong secret: telemetrygen fails, nothing is stored', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source = await otlpSourceWithTables(sluice!.svc, 'telemetrygen-http-refused');
    const wrong = { endpoint: sluice!.httpEndpoint, http: { pathPrefix: source.basePath }, secret: `${source.secret}x`, service: 'tg-refused' };
    await expect(telemetrygenRuns(tools!, wrong)).rejects.toThrow(/404 Not Found/);
    const records = await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records`);
    expect(records.json.records).toEqual([]);
  }, 120_000);
});

describe("the OpenTelemetry Collector's otlp_http exporter", () => {
  let collector: CollectorProcess | undefined;
  afterAll(async () => {
    await collector?.stop();
  });

  it('forwards, gzipped and with a Bearer header, what telemetrygen sent to its otlp receiver; every record lands in its table', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source: OtlpSource = await otlpSourceWithTables(sluice!.svc, 'collector-http');
    const receiver = `127.0.0.1:${await freePort()}`;
    collector = await CollectorProcess.start(
      tools!,
      collectorConfig({
        receiverGrpc: receiver,
        exporter: 'otlp_http',
        exporterSettings: {
          endpoint: `http://${sluice!.httpEndpoint}${source.basePath}`,
          headers: { Authorization: 'Bearer ${env:SLUICE_OTLP_SECRET}' },
        },
      }),
      { SLUICE_OTLP_SECRET: source.secret },
    );
    // telemetrygen speaks gRPC to the Collector's receiver; the Collector speaks OTLP/HTTP to Sluice.
    const sent = await telemetrygenRuns(tools!, { endpoint: receiver, service: 'via-collector-http' });
    await expectRecordsOfEachSignal(sluice!.svc, source, 'via-collector-http', sent);

    const recent = await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records?limit=1`);
    const headers = recordHeaders(recent.json.records[0]);
    expect(headers['content-encoding']).toBe('gzip');
    expect(headers['user-agent']).toMatch(/^OpenTelemetry Collector.*\/0\.165\.0 /);
    expect(headers.authorization).toBeUndefined();
    // The secret travelled as a header: it is in none of the Collector's own log lines.
    expect(collector.logs()).not.toContain(source.secret);
  }, 120_000);
});
