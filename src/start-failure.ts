/**
 * A start that cannot go on, for a reason the user can fix: a port in use, a data directory
 * another process holds. main.ts prints it as one line, `Cannot start: <message>`, with no
 * stack trace; the message says what to do.
 */
export class StartFailure extends Error {
  override name = 'StartFailure';
}
