/**
 * Every call's status, read where it leaves: on the HTTP/2 stream, from the `grpc-status` that
 * grpc-js sent (in the trailers, or in the headers of a trailers-only answer). An interceptor
 * sees only the statuses that pass through it; grpc-js answers some calls below the
 * interceptors: a message that does not inflate (INTERNAL), an unknown grpc-encoding or method
 * (UNIMPLEMENTED), a message over the limit (RESOURCE_EXHAUSTED), a deadline that passed
 * (DEADLINE_EXCEEDED). A stream closed before any status (the client cancelled or went away)
 * counts as CANCELLED; a request that is not gRPC (grpc-js answers it 415 over HTTP) is not a
 * call and is not counted.
 */
import type { Http2Server, IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { status as GrpcCode } from '@grpc/grpc-js';

/** Called once per call with its gRPC status code and the seconds from its headers to its end. */
export type CallAnswered = (code: number, seconds: number) => void;

/** The status a closed stream answered; undefined when it answered no gRPC call. */
export function streamStatus(stream: Pick<ServerHttp2Stream, 'sentHeaders' | 'sentTrailers'>): number | undefined {
  // Node's sentHeaders is undefined until headers were sent (its types say otherwise).
  const headers = stream.sentHeaders as OutgoingHttpHeaders | undefined;
  const sent = stream.sentTrailers?.['grpc-status'] ?? headers?.['grpc-status'];
  if (sent !== undefined) return Number(sent);
  return headers?.[':status'] === undefined ? GrpcCode.CANCELLED : undefined;
}

/** Reports the status of every call of `server` (grpc-js's HTTP/2 server) to `answered`. */
export function countCallAnswers(server: Http2Server, answered: CallAnswered): void {
  server.on('stream', (stream: ServerHttp2Stream, _headers: IncomingHttpHeaders) => {
    const started = performance.now();
    stream.once('close', () => {
      const code = streamStatus(stream);
      if (code !== undefined) answered(code, (performance.now() - started) / 1000);
    });
  });
}
