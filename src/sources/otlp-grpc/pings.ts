/**
 * Keepalive enforcement, which grpc-js's server does not have (it neither bounds a client's pings
 * nor takes grpc.http2.min_ping_interval_without_data_ms): grpc-go's rule. A PING that comes
 * less than `minIntervalMs` after the client's previous one, with no call started or ended in
 * between, is a strike; a call resets the strikes (a grpc-go client's BDP pings follow answers);
 * the third strike closes the connection with GOAWAY ENHANCE_YOUR_CALM and the debug data
 * "too_many_pings", on which grpc-go and grpc-js clients double their keepalive interval. Pings on
 * an idle connection count the same (grpc-go's permit_without_stream is false there too, and the
 * idle timeout closes such a connection anyway).
 */
import { constants, type ServerHttp2Session } from 'node:http2';

/** Strikes a connection may have; one more closes it (grpc-go's maxPingStrikes). */
const MAX_PING_STRIKES = 2;
/** How long the running calls of a connection closed for its pings may take to finish. */
const CLOSE_GRACE_MS = 1_000;
const TOO_MANY_PINGS = Buffer.from('too_many_pings');

/** Watches one connection's pings; `closed` is called when it is closed for them. */
export function enforcePingInterval(session: ServerHttp2Session, minIntervalMs: number, closed: () => void): void {
  let lastPing: number | undefined;
  let strikes = 0;
  let callsSincePing = false;
  // The GOAWAY names the last call taken: the client must not think it may resend those.
  let lastStreamId = 0;
  const call = () => {
    callsSincePing = true;
  };
  session.on('stream', (stream) => {
    callsSincePing = true;
    lastStreamId = Math.max(lastStreamId, stream.id ?? 0);
    stream.once('close', call);
  });
  session.on('ping', () => {
    const now = performance.now();
    const previous = lastPing;
    lastPing = now;
    if (callsSincePing) {
      callsSincePing = false;
      strikes = 0;
      return;
    }
    if (previous === undefined || now - previous >= minIntervalMs) return;
    if (++strikes <= MAX_PING_STRIKES || session.closed || session.destroyed) return;
    closed();
    try {
      session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, lastStreamId, TOO_MANY_PINGS);
      session.close();
    } catch {
      session.destroy();
      return;
    }
    setTimeout(() => session.destroy(), CLOSE_GRACE_MS).unref();
  });
}
