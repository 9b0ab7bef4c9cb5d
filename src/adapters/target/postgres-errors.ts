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

/**
 * A write's failure on its data (SQLSTATE class 22, a value that does not convert; 23, a key
 * NULL or a constraint; 54, a key value longer than a btree index takes, about 2,700 bytes) as
 * an Error that says what and where: PostgreSQL names the value in its message and the column
 * and line of a COPY in `where`. Anything else unchanged.
 */
export function dataError(err: unknown, tableId: string): unknown {
  const e = err as { code?: string; message?: string; where?: string };
  if (!(err instanceof Error) || typeof e.code !== 'string' || !/^(22|23|54)/.test(e.code)) return err;
  const where = e.where ? ` (${e.where.split('\n').join('; ')})` : '';
  return new Error(`the write to table "${tableId}" failed: ${e.message}${where}; nothing was written`, { cause: err });
}
