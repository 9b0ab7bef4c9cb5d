import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; secrets are redacted wherever they may appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'sluice' },
    redact: {
      paths: ['req.headers["x-storageapi-token"]', 'req.headers.authorization', 'token', 'secret'],
      censor: '*****',
    },
  });
}
