/**
 * A failure with an HTTP status and a machine-readable code. Services throw these; each API
 * family's plugin renders them in its own envelope (the Stream API as
 * {statusCode, error: "stream.api.<code>", message}, the Storage API as {error, code, status}).
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Reference messages are sentences: first letter capitalised, trailing period. */
export function sentence(message: string): string {
  const m = message.trim();
  if (m === '') return m;
  const first = m[0].toUpperCase() + m.slice(1);
  return /[.!?)]$/.test(first) ? first : first + '.';
}
