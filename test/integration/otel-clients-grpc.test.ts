/**
 * The same two real clients over OTLP/gRPC (`--otlp-grpc-port`): telemetrygen's gRPC exporter, and
 * the OpenTelemetry Collector's `otlp_grpc` exporter (gzip by default) forwarding what telemetrygen
 * sent to its receiver. Both carry the source's secret as the metadata `authorization: Bearer
 * <secret>`, which alone finds the source; the records land in the default sinks' tables.
 * Skipped with a line when Go is missing (test/helpers/otel-tools.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/child-service.js';
import { CollectorProcess, ensureOtelTools, noteSkipped, OTEL_TOOLS_TIMEOUT_MS, type OtelTools } from '../helpers/otel-tools.js';
import { otlpSourceWithTables, startOtlpChild, type OtlpChild } from '../helpers/otlp-child.js';
import { collectorConfig, expectRecordsOfEachSignal, telemetrygenRuns } from '../helpers/otel-client-runs.js';

let tools: OtelTools | undefined;
let skipReason = '';
let sluice: OtlpChild | undefined;

beforeAll(async () => {
  const answer = await ensureOtelTools();
  if ('skip' in answer) {
    skipReason = answer.skip;
    noteSkipped('otel-clients-grpc.test.ts', skipReason);
    return;
  }
  tools = answer.tools;
  sluice = await startOtlpChild({ grpc: true });
}, OTEL_TOOLS_TIMEOUT_MS);

afterAll(async () => {
  await sluice?.close();
});

describe('telemetrygen over OTLP/gRPC', () => {
  it('sends logs, traces and metrics with the secret in the authorization metadata; every record lands in its table', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source = await otlpSourceWithTables(sluice!.svc, 'telemetrygen-grpc');
    const sent = await telemetrygenRuns(tools!, { endpoint: sluice!.grpcEndpoint!, secret: source.secret, service: 'tg-grpc' });
    await expectRecordsOfEachSignal(sluice!.svc, source, 'tg-grpc', sent);
  }, 120_000);

  it('is refused with a wrong secret: telemetrygen fails, nothing is stored', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source = await otlpSourceWithTables(sluice!.svc, 'telemetrygen-grpc-refused');
    await expect(telemetrygenRuns(tools!, { endpoint: sluice!.grpcEndpoint!, secret: `${source.secret}x`, service: 'tg-refused' })).rejects.toThrow(/Unauthenticated/i);
    const records = await sluice!.svc.call('GET', `/v1/branches/default/sources/${source.sourceId}/records`);
    expect(records.json.records).toEqual([]);
  }, 120_000);
});

describe("the OpenTelemetry Collector's otlp_grpc exporter", () => {
  let collector: CollectorProcess | undefined;
  afterAll(async () => {
    await collector?.stop();
  });

  it('forwards, gzipped and with the authorization metadata, what telemetrygen sent to its otlp receiver; every record lands in its table', async (ctx) => {
    ctx.skip(!tools, skipReason);
    const source = await otlpSourceWithTables(sluice!.svc, 'collector-grpc');
    const receiver = `127.0.0.1:${await freePort()}`;
    collector = await CollectorProcess.start(
      tools!,
      collectorConfig({
        receiverGrpc: receiver,
        exporter: 'otlp_grpc',
        exporterSettings: {
          endpoint: sluice!.grpcEndpoint,
          tls: { insecure: true },
          compression: 'gzip',
          headers: { authorization: 'Bearer ${env:SLUICE_OTLP_SECRET}' },
        },
      }),
      { SLUICE_OTLP_SECRET: source.secret },
    );
    const sent = await telemetrygenRuns(tools!, { endpoint: receiver, service: 'via-collector-grpc' });
    await expectRecordsOfEachSignal(sluice!.svc, source, 'via-collector-grpc', sent);
    expect(collector.logs()).not.toContain(source.secret);
  }, 120_000);
});
