/**
 * Which PostgreSQL failures mean "the database is not there" (the caller answers 503 and
 * retries later) rather than "this statement is wrong".
 */
import { TargetUnavailableError } from '../../ports/target.js';

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
/** SQLSTATEs: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections, database_dropped... */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57P04', '3D000']);

export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof TargetUnavailableError) return true;
  const code = (err as { code?: string }).code;
  if (code !== undefined && (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.has(code) || code.startsWith('08'))) return true;
  // pg's own messages for a pool that cannot connect and for a connection that went away.
  return /timeout exceeded when trying to connect|Connection terminated|connection is closed|Client has encountered a connection error|terminating connection/i.test(err.message);
}

/** `err` as a TargetUnavailableError when it is one, else unchanged. */
export function translate(err: unknown, where: string): unknown {
  if (err instanceof TargetUnavailableError || !isUnavailable(err)) return err;
  return new TargetUnavailableError(`${where} is not reachable: ${(err as Error).message || (err as { code?: string }).code}`, { cause: err });
}
