/**
 * The OTLP messages Sluice decodes and answers with: the upstream opentelemetry-proto files and
 * `google.rpc.Status`, vendored unmodified under `proto/` (origins and licences in
 * proto/README.md), loaded by protobufjs once, on first use. Enum fields decode to the integer
 * the wire carries (protobufjs' default), which is what the flattening writes; OTLP/JSON sends
 * enums as integers, and protobufjs also takes their names. Fields Sluice never reads cost
 * nothing unless a client sends them.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** The vendored files: beside this module in src/, copied beside it into dist/ by the build. */
const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));

const FILES = [
  'opentelemetry/proto/collector/logs/v1/logs_service.proto',
  'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
  'opentelemetry/proto/collector/trace/v1/trace_service.proto',
  'google/rpc/status.proto',
];

export interface OtlpTypes {
  logsRequest: protobuf.Type;
  logsResponse: protobuf.Type;
  metricsRequest: protobuf.Type;
  metricsResponse: protobuf.Type;
  traceRequest: protobuf.Type;
  traceResponse: protobuf.Type;
  rpcStatus: protobuf.Type;
  /** The collector services (OTLP/gRPC): each has one method, Export, of the signal's request and response. */
  logsService: protobuf.Service;
  metricsService: protobuf.Service;
  traceService: protobuf.Service;
}

let types: OtlpTypes | undefined;

/**
 * protobufjs' setter of a oneof's virtual field (the decoder sets it after each member, e.g.
 * `value = "stringValue"` on every AnyValue) deletes every other member of the oneof from the
 * message, whether the message has it or not. Deleting a property the object does not own
 * changes nothing but is slow (a runtime call each), and made decoding a log record cost
 * 1.6 times as much. The same setter, deleting only the members the message owns: the same
 * messages (the last member on the wire wins), without the calls. protobufjs builds the setter
 * when a message type's constructor is made, so this is set before the types are loaded.
 */
function ownMembersOneofSetter(fieldNames: string[]): (this: Record<string, unknown>, name: string) => void {
  const owns = Object.prototype.hasOwnProperty;
  return function setOneof(name) {
    for (const field of fieldNames) if (field !== name && owns.call(this, field)) delete this[field];
  };
}

/** The message types, loaded and resolved on first use (a few milliseconds, once per process). */
export function otlpTypes(): OtlpTypes {
  if (types) return types;
  (protobuf.util as unknown as { oneOfSetter: typeof ownMembersOneofSetter }).oneOfSetter = ownMembersOneofSetter;
  const root = new protobuf.Root();
  // Files and their imports are named from the proto root ("opentelemetry/proto/common/v1/
  // common.proto"); the well-known google/protobuf types are protobufjs' own.
  root.resolvePath = (_origin, target) => (target.startsWith('google/protobuf/') || target.startsWith(PROTO_DIR) ? target : PROTO_DIR + target);
  // keepCase false: fields get protobufjs' lowerCamelCase names, which are also OTLP/JSON's keys.
  root.loadSync(FILES, { keepCase: false });
  root.resolveAll();
  types = {
    logsRequest: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
    logsResponse: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse'),
    metricsRequest: root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'),
    metricsResponse: root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse'),
    traceRequest: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    traceResponse: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    rpcStatus: root.lookupType('google.rpc.Status'),
    logsService: root.lookupService('opentelemetry.proto.collector.logs.v1.LogsService'),
    metricsService: root.lookupService('opentelemetry.proto.collector.metrics.v1.MetricsService'),
    traceService: root.lookupService('opentelemetry.proto.collector.trace.v1.TraceService'),
  };
  return types;
}
