/**
 * OTLP over gRPC, the OTLP source type's second transport beside OTLP/HTTP (sources/otlp/): a
 * listener of its own, the collector services, admission by the Bearer secret, the status codes
 * the OTLP specification prescribes. The export itself is sources/otlp/ingest.ts, shared.
 */
export { startOtlpGrpc, type ListenerEvents, type OtlpGrpcListener, type OtlpGrpcOptions } from './server.js';
export type { ConnectionGate } from './connections.js';
export { UNLIMITED, type GrpcLimits } from './limits.js';
