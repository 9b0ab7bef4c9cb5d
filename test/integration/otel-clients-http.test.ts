/**
 * Two real OTLP/HTTP clients nobody here wrote, against a real `sluice serve`: the Collector
 * project's load generator telemetrygen, and the OpenTelemetry Collector's `otlp_http` exporter
 * (gzip; the README's configuration) forwarding what telemetrygen sent to the Collector's otlp
 * receiver. Both carry the source's secret as `Authorization: Bearer` on `otlp.baseUrl`; their
 * records land in the default sinks' tables. The binaries come from scripts/build-otel-tools.sh
 * (test/helpers/otel-tools.ts); without Go these tests are skipped with a line saying so.
 */
import { expect } from 'vitest';
import { describeRealClients } from '../helpers/otel-client-runs.js';

describeRealClients('otel-clients-http.test.ts', {
  name: 'HTTP',
  telemetrygenTarget: (sluice, source) => ({ endpoint: sluice.httpEndpoint, http: { pathPrefix: source.basePath } }),
  refusal: /404 Not Found/,
  exporter: 'otlp_http/sluice',
  exporterEndpoint: (sluice, source) => `http://${sluice.httpEndpoint}${source.basePath}`,
  headerChecks: {
    telemetrygen(headers) {
      expect(headers['content-type']).toBe('application/x-protobuf');
      expect(headers['user-agent']).toMatch(/^OTel Go OTLP over HTTP\/protobuf /);
      expect(headers.authorization).toBeUndefined();
    },
    collector(headers) {
      // Its body came gzipped (the README's `compression: gzip`); the record is the inflated
      // body, without the Content-Encoding.
      expect(headers['content-encoding']).toBeUndefined();
      expect(headers['user-agent']).toMatch(/^OpenTelemetry Collector.*\/0\.165\.0 /);
      expect(headers.authorization).toBeUndefined();
    },
  },
});
