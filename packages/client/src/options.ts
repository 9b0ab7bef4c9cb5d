/** The client's options, their defaults, and the checks that refuse a setting that cannot work. */
import { DEFAULT_RETRY, type RetryOptions, type RetryPolicy } from './backoff.js';
import type { QueueFullError } from './errors.js';
import type { BatchResult } from './results.js';

export interface ClientOptions {
  /**
   * The HTTP source's ingestion URL (its `http.url`: `http://host:port/stream/<projectId>/<sourceId>/<secret>`);
   * the client posts to `<url>/batch`. A URL that already ends in `/batch` is taken as it is.
   */
  url: string | URL;
  /** A batch is sent once it holds this many records. Default 500. */
  maxBatchRecords?: number;
  /** ... or once one more record would take its body past this many bytes (before gzip). Default 1 MiB. */
  maxBatchBytes?: number;
  /** ... or this long after its first record came (ms). Default 100. */
  lingerMs?: number;
  /**
   * Batches in flight at once (each with its retries). Default 2. With 1 the records reach the
   * server in the order they were sent; with more, batches can overtake each other.
   */
  concurrency?: number;
  /** `gzip` (default): bodies sent with `Content-Encoding: gzip`; `none`: as they are. */
  compression?: 'gzip' | 'none';
  /** The queue (records waiting, in batches in flight or being retried) holds at most this many records. Default 100 000. */
  maxQueueRecords?: number;
  /** ... and at most this many bytes of records. Default 64 MiB. */
  maxQueueBytes?: number;
  /**
   * Called by `send` instead of throwing QueueFullError when the queue is full: the record was
   * not queued (count it, log it, keep it elsewhere). `sendAsync` waits instead.
   */
  onFull?: (record: unknown, error: QueueFullError) => void;
  /** Check that a record given as a string is JSON text (JSON.parse), so that send() refuses it at once. Default true. */
  validate?: boolean;
  retry?: RetryOptions;
  /** A request without an answer within this time is a network error, retried (ms). Default 30 000. */
  requestTimeoutMs?: number;
  /** More request headers (the content type and encoding are the client's). */
  headers?: Record<string, string>;
  /** Called with the outcome of each batch once it is final (accepted, rejected with reasons, given up). */
  onBatch?: (result: BatchResult) => void;
  /** The fetch to use (default the platform's). */
  fetch?: typeof fetch;
  /** The jitter's random source, [0, 1) (default Math.random). */
  random?: () => number;
}

export interface Settings {
  url: string;
  maxBatchRecords: number;
  maxBatchBytes: number;
  lingerMs: number;
  concurrency: number;
  gzip: boolean;
  maxQueueRecords: number;
  maxQueueBytes: number;
  onFull?: (record: unknown, error: QueueFullError) => void;
  validate: boolean;
  retry: RetryPolicy;
  requestTimeoutMs: number;
  headers: Record<string, string>;
  onBatch?: (result: BatchResult) => void;
  fetch: typeof fetch;
  random: () => number;
}

export const DEFAULTS = {
  maxBatchRecords: 500,
  maxBatchBytes: 1024 * 1024,
  lingerMs: 100,
  concurrency: 2,
  maxQueueRecords: 100_000,
  maxQueueBytes: 64 * 1024 * 1024,
  requestTimeoutMs: 30_000,
} as const;

/** Headers the client sets itself. */
const OWN_HEADERS = new Set(['content-type', 'content-encoding', 'content-length']);

export function settingsOf(options: ClientOptions): Settings {
  if (options === null || typeof options !== 'object') throw new TypeError('createClient takes an options object: createClient({ url })');
  const s: Settings = {
    url: batchUrl(options.url),
    maxBatchRecords: whole('maxBatchRecords', options.maxBatchRecords ?? DEFAULTS.maxBatchRecords, 1),
    maxBatchBytes: whole('maxBatchBytes', options.maxBatchBytes ?? DEFAULTS.maxBatchBytes, 2),
    lingerMs: whole('lingerMs', options.lingerMs ?? DEFAULTS.lingerMs, 0),
    concurrency: whole('concurrency', options.concurrency ?? DEFAULTS.concurrency, 1),
    gzip: compression(options.compression),
    maxQueueRecords: whole('maxQueueRecords', options.maxQueueRecords ?? DEFAULTS.maxQueueRecords, 1),
    maxQueueBytes: whole('maxQueueBytes', options.maxQueueBytes ?? DEFAULTS.maxQueueBytes, 1),
    onFull: fn('onFull', options.onFull),
    validate: options.validate ?? true,
    retry: {
      initialDelayMs: whole('retry.initialDelayMs', options.retry?.initialDelayMs ?? DEFAULT_RETRY.initialDelayMs, 1),
      maxDelayMs: whole('retry.maxDelayMs', options.retry?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs, 1),
      giveUpAfterMs: wholeOrInfinity('retry.giveUpAfterMs', options.retry?.giveUpAfterMs ?? DEFAULT_RETRY.giveUpAfterMs),
    },
    requestTimeoutMs: whole('requestTimeoutMs', options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs, 1),
    headers: ownHeaders(options.headers),
    onBatch: fn('onBatch', options.onBatch),
    fetch: fn('fetch', options.fetch) ?? platformFetch(),
    random: fn('random', options.random) ?? Math.random,
  };
  // A queue smaller than a batch would never fill a batch: the linger time alone would send.
  if (s.maxQueueRecords < s.maxBatchRecords) throw new RangeError(`maxQueueRecords (${s.maxQueueRecords}) must be at least maxBatchRecords (${s.maxBatchRecords}).`);
  if (s.maxQueueBytes < s.maxBatchBytes) throw new RangeError(`maxQueueBytes (${s.maxQueueBytes}) must be at least maxBatchBytes (${s.maxBatchBytes}).`);
  if (s.retry.maxDelayMs < s.retry.initialDelayMs) throw new RangeError(`retry.maxDelayMs (${s.retry.maxDelayMs}) must be at least retry.initialDelayMs (${s.retry.initialDelayMs}).`);
  return s;
}

function batchUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`url must be the source's ingestion URL (http://host:port/stream/<projectId>/<sourceId>/<secret>), not ${JSON.stringify(String(url))}.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`url must be http: or https:, not ${parsed.protocol}`);
  const path = parsed.pathname.replace(/\/+$/, '');
  parsed.pathname = path.endsWith('/batch') ? path : `${path}/batch`;
  return parsed.toString();
}

function whole(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be a whole number of at least ${min}, not ${JSON.stringify(value)}.`);
  }
  return value;
}

function wholeOrInfinity(name: string, value: unknown): number {
  return value === Infinity ? Infinity : whole(name, value, 0);
}

function compression(value: unknown): boolean {
  if (value === undefined || value === 'gzip') {
    if (typeof CompressionStream !== 'function') throw new TypeError('compression "gzip" needs CompressionStream, which this platform lacks: pass compression: "none".');
    return true;
  }
  if (value === 'none') return false;
  throw new RangeError(`compression must be "gzip" or "none", not ${JSON.stringify(value)}.`);
}

function fn<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new TypeError(`${name} must be a function.`);
  return value;
}

function platformFetch(): typeof fetch {
  if (typeof globalThis.fetch !== 'function') throw new TypeError('This platform has no fetch: pass options.fetch.');
  return globalThis.fetch.bind(globalThis);
}

function ownHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (OWN_HEADERS.has(name.toLowerCase())) throw new TypeError(`headers: ${name} is set by the client.`);
    out[name.toLowerCase()] = String(value);
  }
  return out;
}
