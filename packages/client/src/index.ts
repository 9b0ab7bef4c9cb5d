/**
 * @sluice/client: sends records to a Sluice HTTP source's batch endpoint (`<http.url>/batch`),
 * batched by count, bytes and time, gzipped, retried with jittered back-off that honours
 * Retry-After on 429/503, from a bounded in-memory queue; each batch's outcome (accepted,
 * rejected with reasons) through `onBatch` and `flush()`. Only the platform (fetch,
 * CompressionStream, timers): Node 20 and browsers.
 *
 *   const client = createClient({ url: 'http://localhost:8000/stream/1/orders/<secret>' });
 *   client.send({ id: 1, total: 9.5 });
 *   const { accepted, rejected, rejections } = await client.close();
 */
export { createClient, type Client, type ClientStats } from './client.js';
export { DEFAULTS, type ClientOptions } from './options.js';
export { DEFAULT_RETRY, type RetryOptions } from './backoff.js';
export { ClientClosedError, InvalidRecordError, QueueFullError } from './errors.js';
export type { BatchResult, FlushResult, Rejection } from './results.js';
