/**
 * An error caused by the configuration or the remote API, shown to the user as is: the CLI
 * exits 1 with its message (2 for any other error). Its name is `UserError`, by which an
 * embedding program (Sluice's job queue) tells it from an application error.
 */
export class UserError extends Error {
  override name = 'UserError';
}
