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

/**
 * What a start is told when PostgreSQL answers but refuses: the login (SQLSTATE class 28: a
 * wrong password, a user that does not exist, pg_hba) or the database (3D000: it does not
 * exist). One line that says which part of --target to fix, never the password; undefined for
 * anything else.
 */
export function refusedAtOpen(failure: unknown, where: string, url: URL): TargetUnavailableError | undefined {
  // The pool's own translation may have wrapped it already.
  const err = failure instanceof TargetUnavailableError && failure.cause !== undefined ? failure.cause : failure;
  const code = (err as { code?: string }).code;
  if (typeof code !== 'string') return undefined;
  const user = decodeURIComponent(url.username) || 'the default user';
  if (code.startsWith('28')) {
    return new TargetUnavailableError(`${where} refused the login of ${url.username ? `user "${user}"` : user}: ${(err as Error).message}. Check the user and password in --target (SLUICE_TARGET).`, { cause: err });
  }
  if (code === '3D000') {
    const database = decodeURIComponent(url.pathname.slice(1));
    return new TargetUnavailableError(`${where}: ${(err as Error).message}. Create it (createdb -h ${url.hostname} -p ${url.port || 5432} -U ${user} ${database}) or name another database in --target.`, { cause: err });
  }
  return undefined;
}
