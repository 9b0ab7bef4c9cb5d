/**
 * The OTLP/gRPC listener of a node with the ingest role (`--otlp-grpc-port`, 0: none), with the
 * same export core as OTLP/HTTP: the same log, back-pressure, mappings, quotas and in-flight
 * budget (sources/otlp/ingest.ts).
 */
import type { AppServices } from './http-app.js';
import { grpcAnswerCounter } from '../observability/ingest-requests.js';
import { OtlpIngest } from '../sources/otlp/ingest.js';
import type { OtlpGrpcListener } from '../sources/otlp-grpc/index.js';

export async function startOtlpGrpcListener(services: AppServices): Promise<OtlpGrpcListener | undefined> {
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
    isShuttingDown: services.isShuttingDown,
    logger: services.logger.child({ component: 'otlp-grpc' }),
    answered: grpcAnswerCounter(services.metrics, services.isShuttingDown),
  }, config.otlpGrpcHost, config.otlpGrpcPort);
}
