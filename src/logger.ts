import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** How log lines are written: `pretty` for a person at a terminal (the default there), `json` for a log collector (the default otherwise). */
export type LogFormat = 'pretty' | 'json';

/**
 * The node's logger on stdout; secrets are redacted wherever they may appear. `pretty` writes
 * `[12:01:02.345] INFO: sluice is ready: …` lines with the fields below them (pino-pretty, in this
 * thread: a terminal is read by a person, not a collector that needs every microsecond).
 */
export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  const options = {
    level,
    base: { service: 'sluice' },
    redact: {
      paths: ['req.headers["x-storageapi-token"]', 'req.headers.authorization', 'token', 'secret'],
      censor: '*****',
    },
  };
  if (format === 'json') return pino(options);
  return pino(options, pretty({ colorize: process.stdout.isTTY === true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }));
}
