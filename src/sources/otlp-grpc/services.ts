/**
 * The three OTLP collector services as grpc-js service definitions, read from the vendored
 * upstream protos (sources/otlp/proto/: LogsService, MetricsService, TraceService, each with
 * one unary method, Export). The messages stay bytes on both sides: the request is decoded by
 * the one OTLP decoder (sources/otlp/decode.ts) once the source is authenticated, and the
 * response is encoded by sources/otlp/encode.ts, as on OTLP/HTTP. (A deserializer that threw
 * would make grpc-js answer INTERNAL; the decoder's errors are INVALID_ARGUMENT.)
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import type { Signal } from '../../model/definition.js';
import { otlpTypes } from '../otlp/schema.js';

export type ExportMethod = MethodDefinition<Buffer, Buffer>;

/** The method name of every collector service, and the key of its handler. */
export const EXPORT = 'Export';

const bytes = (b: Buffer): Buffer => b;

function service(signal: Signal): protobuf.Service {
  const t = otlpTypes();
  return signal === 'logs' ? t.logsService : signal === 'metrics' ? t.metricsService : t.traceService;
}

/** `/opentelemetry.proto.collector.logs.v1.LogsService/Export`, etc. */
export function exportPath(signal: Signal): string {
  const s = service(signal);
  const method = s.methods[EXPORT];
  if (!method || method.requestStream || method.responseStream) throw new Error(`${s.fullName} has no unary ${EXPORT} method`);
  return `/${s.fullName.replace(/^\./, '')}/${method.name}`;
}

/** The service definition of a signal's collector service, its messages as bytes. */
export function exportService(signal: Signal): ServiceDefinition<{ [EXPORT]: ExportMethod }> {
  const method: ExportMethod = {
    path: exportPath(signal),
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  };
  return { [EXPORT]: method };
}
