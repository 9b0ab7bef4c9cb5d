/**
 * The OTLP/gRPC listener of a node with the ingest role (`--otlp-grpc-port`, 0: none), with the
 * same export core as OTLP/HTTP: the same log, back-pressure, mappings, quotas and in-flight
 * budget (sources/otlp/ingest.ts).
 */
import type { AppServices } from './http-app.js';
import type { Config } from '../config.js';
import { httpLimits } from '../http/http-server.js';
import type { Metrics } from '../observability/metrics.js';
import { grpcAnswerCounter } from '../observability/ingest-requests.js';
import { OtlpIngest } from '../sources/otlp/ingest.js';
import type { ConnectionGate, GrpcLimits, ListenerEvents, OtlpGrpcListener } from '../sources/otlp-grpc/index.js';

/**
 * `nodeConnections`: the node's connection cap (the HTTP listeners' HttpServers), which the
 * gRPC connections count in too.
 */
export async function startOtlpGrpcListener(services: AppServices, nodeConnections?: ConnectionGate): Promise<OtlpGrpcListener | undefined> {
  const { config } = services;
  if (!config.roles.has('ingest') || config.otlpGrpcPort === 0) return undefined;
  // grpc-js is loaded only by nodes that listen (a node without gRPC starts as fast as before).
  const { startOtlpGrpc } = await import('../sources/otlp-grpc/index.js');
  const ingest = new OtlpIngest({
    eventLog: services.eventLog,
    backlog: services.backlogGate,
    mappings: services.mappings,
    projectId: config.projectId,
    maxBodyBytes: config.otlpMaxBodyBytes,
    inflight: services.otlpInflight,
    quotas: services.quotas,
  });
  return startOtlpGrpc({
    ingest,
    sources: services.ingestSources,
    maxBodyBytes: config.otlpMaxBodyBytes,
    limits: grpcLimits(config),
    nodeConnections,
    isShuttingDown: services.isShuttingDown,
    logger: services.logger.child({ component: 'otlp-grpc' }),
    answered: grpcAnswerCounter(services.metrics, services.isShuttingDown),
    events: listenerEvents(services.metrics),
  }, config.otlpGrpcHost, config.otlpGrpcPort);
}

/** The `--otlp-grpc-*` limits; the connection cap unset: half of the node's (`--max-connections`, 0: none). */
export function grpcLimits(config: Config): GrpcLimits {
  return {
    maxConcurrentStreams: config.otlpGrpcMaxConcurrentStreams,
    maxConnections: config.otlpGrpcMaxConnections ?? Math.ceil(httpLimits(config).maxConnections / 2),
    maxConnectionIdleMs: config.otlpGrpcMaxConnectionIdleMs,
    maxConnectionAgeMs: config.otlpGrpcMaxConnectionAgeMs,
    maxConnectionAgeGraceMs: config.otlpGrpcMaxConnectionAgeGraceMs,
    minPingIntervalMs: config.otlpGrpcMinPingIntervalMs,
  };
}

function listenerEvents(metrics: Metrics): ListenerEvents {
  const tooManyPings = metrics.otlpGrpcConnectionsClosed.labels({ reason: 'too_many_pings' });
  return {
    refused: (limit) => metrics.otlpGrpcConnectionsRefused.inc({ limit }),
    open: (delta) => metrics.otlpGrpcConnections.inc(delta),
    tooManyPings: () => tooManyPings.inc(),
  };
}
