/**
 * The same two real clients over OTLP/gRPC (`--otlp-grpc-port`): telemetrygen's gRPC exporter, and
 * the OpenTelemetry Collector's `otlp_grpc` exporter (gzip; the README's configuration) forwarding
 * what telemetrygen sent to its receiver. Both carry the source's secret as the metadata
 * `authorization: Bearer <secret>`, which alone finds the source; the records land in the default
 * sinks' tables. Skipped with a line when Go is missing (test/helpers/otel-tools.ts).
 */
import { expect } from 'vitest';
import { describeRealClients } from '../helpers/otel-client-runs.js';

describeRealClients('otel-clients-grpc.test.ts', {
  name: 'gRPC',
  telemetrygenTarget: (sluice) => ({ endpoint: sluice.grpcEndpoint! }),
  refusal: /Unauthenticated/i,
  exporter: 'otlp_grpc/sluice',
  exporterEndpoint: (sluice) => sluice.grpcEndpoint!,
  headerChecks: {
    telemetrygen(headers) {
      expect(headers['user-agent']).toMatch(/^OTel Go OTLP over gRPC .* grpc-go\//);
      expect(headers.authorization).toBeUndefined();
    },
    collector(headers) {
      expect(headers['user-agent']).toMatch(/^OpenTelemetry Collector.*\/0\.165\.0 .* grpc-go\//);
      expect(headers.authorization).toBeUndefined();
    },
  },
});
