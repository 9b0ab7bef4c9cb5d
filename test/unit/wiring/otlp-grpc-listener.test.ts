/**
 * Which nodes listen for OTLP over gRPC (src/wiring/otlp-grpc.ts): nodes with the ingest role
 * whose --otlp-grpc-port is not 0; the flags and their defaults (4317, the HTTP listener's host;
 * the limits of a client), and the grpc-js options the limits become.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import type { AppServices } from '../../../src/wiring/http-app.js';
import { grpcLimits, startOtlpGrpcListener } from '../../../src/wiring/otlp-grpc.js';
import { grpcJsOptions } from '../../../src/sources/otlp-grpc/limits.js';
import { Metrics } from '../../../src/observability/metrics.js';
import { InflightBudget } from '../../../src/sources/otlp/inflight.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';
import { OtlpGrpcClient, logsRequest } from '../../helpers/otlp-grpc.js';
import { freePort } from '../../helpers/child-service.js';

function services(argv: string[], lookupBySecret: () => undefined = () => undefined, logger = pino({ level: 'silent' })): AppServices {
  const config = loadConfig(argv, {});
  return {
    config, logger, eventLog: new MemoryEventLog(), metrics: new Metrics({ version: 't', target: 'duckdb', eventLog: 'lmdb' }),
    mappings: { get: async () => { throw new Error('no sinks'); } }, otlpInflight: new InflightBudget(1 << 20), isShuttingDown: () => false,
    ingestSources: { lookup: () => undefined, lookupBySecret, invalidate: () => undefined },
  } as unknown as AppServices;
}

describe('the OTLP/gRPC listener of a node', () => {
  it('defaults to port 4317 on the HTTP listener\'s host; the flags and variables change both', () => {
    expect(loadConfig([], {})).toMatchObject({ otlpGrpcPort: 4317, otlpGrpcHost: '0.0.0.0' });
    expect(loadConfig(['--host', '127.0.0.1'], {})).toMatchObject({ otlpGrpcHost: '127.0.0.1' });
    expect(loadConfig([], { SLUICE_OTLP_GRPC_PORT: '0', SLUICE_OTLP_GRPC_HOST: '::1' })).toMatchObject({ otlpGrpcPort: 0, otlpGrpcHost: '::1' });
    expect(() => loadConfig(['--otlp-grpc-port', '70000'], {})).toThrow(/port must be at most 65535/);
    expect(() => loadConfig(['--otlp-grpc-port', 'grpc'], {})).toThrow(/port must be a non-negative integer/);
  });

  it('is not started with port 0, nor on a node without the ingest role', async () => {
    expect(await startOtlpGrpcListener(services(['--otlp-grpc-port', '0']))).toBeUndefined();
    expect(await startOtlpGrpcListener(services(['--kafka', 'k:9092', '--roles', 'api', '--otlp-grpc-port', '4317']))).toBeUndefined();
  });

  it('listens on an ingest node and answers calls (here: an unknown secret)', async () => {
    const port = await freePort();
    const listener = await startOtlpGrpcListener(services(['--host', '127.0.0.1', '--otlp-grpc-port', String(port)]));
    expect(listener?.address).toBe(`127.0.0.1:${port}`);
    const client = new OtlpGrpcClient(listener!.address);
    try {
      expect((await client.export('logs', logsRequest(1), 'nobody')).codeName).toBe('UNAUTHENTICATED');
    } finally {
      client.close();
      await listener!.close();
    }
  });

  it('answers INTERNAL, and logs it, when the admission itself fails', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const broken = () => {
      throw new Error('metadata store closed');
    };
    const listener = await startOtlpGrpcListener(services(['--host', '127.0.0.1', '--otlp-grpc-port', String(await freePort())], broken, logger));
    const client = new OtlpGrpcClient(listener!.address);
    try {
      expect(await client.export('logs', logsRequest(1), 'any')).toMatchObject({ codeName: 'INTERNAL', details: 'Internal error.' });
      expect(lines.join('')).toMatch(/"msg":"OTLP\/gRPC admission failed"/);
      expect(lines.join('')).toMatch(/metadata store closed/);
    } finally {
      client.close();
      await listener!.close();
    }
  });

  it('bounds what a client holds by default, each limit with its flag and variable (0: none)', () => {
    expect(grpcLimits(loadConfig(['--max-connections', '1000'], {}))).toEqual({
      maxConcurrentStreams: 100, maxConnections: 500, maxConnectionIdleMs: 72_000, maxConnectionAgeMs: 1_800_000, maxConnectionAgeGraceMs: 30_000, minPingIntervalMs: 300_000,
    });
    // Without --max-connections, half of its default (3/4 of the open-files limit).
    expect(grpcLimits(loadConfig([], {})).maxConnections).toBeGreaterThan(0);
    expect(grpcLimits(loadConfig(['--max-connections', '0'], {})).maxConnections).toBe(0);
    const set = loadConfig([
      '--otlp-grpc-max-concurrent-streams', '8', '--otlp-grpc-max-connections', '20', '--otlp-grpc-max-connection-idle', '5m',
      '--otlp-grpc-max-connection-age', '1h', '--otlp-grpc-max-connection-age-grace', '0', '--otlp-grpc-min-ping-interval', '10s',
    ], {});
    expect(grpcLimits(set)).toEqual({ maxConcurrentStreams: 8, maxConnections: 20, maxConnectionIdleMs: 300_000, maxConnectionAgeMs: 3_600_000, maxConnectionAgeGraceMs: 0, minPingIntervalMs: 10_000 });
    expect(loadConfig([], { SLUICE_OTLP_GRPC_MAX_CONNECTIONS: '0', SLUICE_OTLP_GRPC_MIN_PING_INTERVAL: '0' })).toMatchObject({ otlpGrpcMaxConnections: 0, otlpGrpcMinPingIntervalMs: 0 });
    expect(() => loadConfig(['--otlp-grpc-max-concurrent-streams', '-1'], {})).toThrow(/OTLP gRPC max concurrent streams must be a non-negative integer/);
    expect(() => loadConfig(['--otlp-grpc-max-connection-idle', 'soon'], {})).toThrow(/OTLP gRPC max connection idle must be a duration/);
  });

  it('gives grpc-js the limits it enforces, leaving out those that are 0, and no timer Node would overflow', () => {
    const limits = { maxConcurrentStreams: 100, maxConnections: 5, maxConnectionIdleMs: 72_000, maxConnectionAgeMs: 1_800_000, maxConnectionAgeGraceMs: 30_000, minPingIntervalMs: 1 };
    expect(grpcJsOptions(limits)).toEqual({
      'grpc.max_concurrent_streams': 100, 'grpc.max_connection_idle_ms': 72_000, 'grpc.max_connection_age_ms': 1_800_000, 'grpc.max_connection_age_grace_ms': 30_000,
    });
    expect(grpcJsOptions({ ...limits, maxConcurrentStreams: 0, maxConnectionIdleMs: 0, maxConnectionAgeMs: 0 })).toEqual({});
    // 30 days: below 2^31 ms, the age also with grpc-js's +10 % of jitter.
    const long = grpcJsOptions({ ...limits, maxConnectionIdleMs: 30 * 86_400_000, maxConnectionAgeMs: 30 * 86_400_000, maxConnectionAgeGraceMs: 1.5 });
    expect(long['grpc.max_connection_idle_ms']).toBeLessThan(2 ** 31 - 1);
    expect(long['grpc.max_connection_age_ms']! * 1.1).toBeLessThan(2 ** 31 - 1);
    expect(long['grpc.max_connection_age_grace_ms']).toBe(2);
  });
});
