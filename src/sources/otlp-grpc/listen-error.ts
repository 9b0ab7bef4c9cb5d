/** The OTLP/gRPC port cannot be bound (in use, no such address): a start failure of one line, naming the flag. */
export class OtlpGrpcListenError extends Error {}
