/** One scrape of the node's metrics, with the optional token check (--metrics-token). */
import { timingSafeEqual } from 'node:crypto';
import type { Metrics } from './metrics.js';

/** Whether the request carries the metrics token (constant-time compare). */
export function metricsAuthorized(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = Buffer.from(/^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim() ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The scrape, as a route handler and as the handler of the --metrics-port listener. */
export async function scrapeAnswer(metrics: Metrics, token: string | undefined, authorization: string | undefined): Promise<{ status: number; type: string; body: string }> {
  if (!metricsAuthorized(authorization, token)) return { status: 401, type: 'text/plain; charset=utf-8', body: 'Unauthorized\n' };
  const { contentType, body } = await metrics.scrape();
  return { status: 200, type: contentType, body };
}

