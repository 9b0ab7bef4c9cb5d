/**
 * What one OTLP/gRPC client may hold (the `--otlp-grpc-*` flags): calls at once per connection,
 * connections, how long a connection may stay idle or live, how often it may ping. grpc-js
 * enforces the per-connection ones from its server options (here); the connection cap is
 * connections.ts's, the ping policy pings.ts's. 0 everywhere means no limit.
 */
import type { ServerOptions } from '@grpc/grpc-js';

export interface GrpcLimits {
  /** Calls at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Open connections of the listener. */
  maxConnections: number;
  /** A connection without a call for this long is closed. */
  maxConnectionIdleMs: number;
  /** A connection is sent GOAWAY after about this long (grpc-js adds ±10 % of jitter). */
  maxConnectionAgeMs: number;
  /** ... and cut this long after that GOAWAY if calls still run on it. */
  maxConnectionAgeGraceMs: number;
  /** Pings closer than this, with no call between, are strikes (pings.ts). */
  minPingIntervalMs: number;
}

/** No limit at all (tests that are about something else). */
export const UNLIMITED: GrpcLimits = {
  maxConcurrentStreams: 0, maxConnections: 0, maxConnectionIdleMs: 0, maxConnectionAgeMs: 0, maxConnectionAgeGraceMs: 0, minPingIntervalMs: 0,
};

/**
 * The longest timer Node keeps (a longer one fires after 1 ms); grpc-js takes 2^31 - 1 for "no
 * limit". Longer durations are clamped below it (about 24 days), the connection age also below
 * its +10 % of jitter.
 */
const MAX_TIMER_MS = 2 ** 31 - 2;

const timer = (ms: number, max = MAX_TIMER_MS): number | undefined => (ms <= 0 ? undefined : Math.min(Math.ceil(ms), max));

/** The grpc-js server options of the limits grpc-js enforces; a limit of 0 leaves grpc-js's default (none). */
export function grpcJsOptions(limits: GrpcLimits): ServerOptions {
  const options: ServerOptions = {};
  if (limits.maxConcurrentStreams > 0) options['grpc.max_concurrent_streams'] = limits.maxConcurrentStreams;
  const idle = timer(limits.maxConnectionIdleMs);
  if (idle !== undefined) options['grpc.max_connection_idle_ms'] = idle;
  const age = timer(limits.maxConnectionAgeMs, Math.floor(MAX_TIMER_MS / 1.1));
  if (age !== undefined) {
    options['grpc.max_connection_age_ms'] = age;
    const grace = timer(limits.maxConnectionAgeGraceMs);
    if (grace !== undefined) options['grpc.max_connection_age_grace_ms'] = grace;
  }
  return options;
}
