/**
 * One batch's delivery: the body (gzipped once), POSTed until the server answers something other
 * than "come back later", then its answer read into a BatchResult.
 *
 * Retried: a network error or timeout, 429 (the source's sinks are behind, or its quota is spent)
 * and 503 (the event log is full, the node is stopping), and 502/504 (a proxy's). Not retried:
 * any other answer, whose reason every record of the batch is reported with.
 */
import { parseRetryAfter, retryDelay, type RetryPolicy } from './backoff.js';
import { frameBatch } from './records.js';
import type { BatchResult, Rejection } from './results.js';

export interface DeliveryContext {
  url: string;
  headers: Readonly<Record<string, string>>;
  gzip: boolean;
  requestTimeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  random: () => number;
  /** Called before each wait for a retry: the status refused (0: no answer). */
  onRetry(status: number): void;
}

export interface OutgoingBatch {
  seq: number;
  records: readonly string[];
  multiline: boolean;
}

const RETRIED = new Set([429, 502, 503, 504]);

/** What one request came back with. */
type Attempt =
  | { kind: 'answer'; status: number; text: string; retryAfterMs?: number }
  | { kind: 'noAnswer'; reason: string };

export async function deliver(batch: OutgoingBatch, ctx: DeliveryContext): Promise<BatchResult> {
  const started = Date.now();
  let body: string | Uint8Array<ArrayBuffer>;
  const headers: Record<string, string> = { ...ctx.headers };
  try {
    const framed = frameBatch(batch.records, batch.multiline);
    headers['content-type'] = framed.contentType;
    body = framed.text;
    if (ctx.gzip) {
      body = await gzip(framed.text);
      headers['content-encoding'] = 'gzip';
    }
  } catch (err) {
    return failed(batch, 0, 0, `The batch could not be encoded: ${(err as Error).message}`);
  }
  for (let attempt = 1; ; attempt++) {
    const answer = await post(ctx, body, headers);
    const retryable = answer.kind === 'noAnswer' || RETRIED.has(answer.status);
    if (!retryable) return readAnswer(batch, answer, attempt);
    const status = answer.kind === 'answer' ? answer.status : 0;
    const why = answer.kind === 'answer' ? `the last answer was ${answer.status}: ${messageOf(answer.text)}` : `the last attempt got no answer: ${answer.reason}`;
    const wait = retryDelay(attempt, answer.kind === 'answer' ? answer.retryAfterMs : undefined, ctx.retry, ctx.random);
    const elapsed = Date.now() - started;
    if (elapsed + wait > ctx.retry.giveUpAfterMs) {
      return failed(batch, status, attempt, `Gave up after ${attempt} attempt${attempt === 1 ? '' : 's'} over ${(elapsed / 1000).toFixed(1)} s (giveUpAfterMs ${ctx.retry.giveUpAfterMs}); ${why}`);
    }
    ctx.onRetry(status);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function post(ctx: DeliveryContext, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string>): Promise<Attempt> {
  try {
    const res = await ctx.fetch(ctx.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(ctx.requestTimeoutMs) });
    const text = await res.text();
    return { kind: 'answer', status: res.status, text, retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), Date.now()) };
  } catch (err) {
    return { kind: 'noAnswer', reason: describeFailure(err, ctx.requestTimeoutMs) };
  }
}

/** Node's fetch says only "fetch failed"; the cause names the socket's error (ECONNREFUSED ...). */
function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return `no answer within requestTimeoutMs (${timeoutMs} ms)`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e.message}: ${cause}` : String(e?.message ?? err);
}

/** The answer's message in the Stream API's envelope ({statusCode, error, message}), else its start. */
function messageOf(text: string): string {
  try {
    const json = JSON.parse(text) as { message?: unknown; error?: unknown };
    if (typeof json.message === 'string') return typeof json.error === 'string' ? `${json.error}: ${json.message}` : json.message;
  } catch {
    // not JSON: a proxy's page, say
  }
  return text.length > 300 ? `${text.slice(0, 300)}…` : text || '(empty answer)';
}

interface BatchAnswer {
  accepted?: unknown;
  rejected?: unknown;
  errors?: Array<{ index?: unknown; message?: unknown }>;
}

function readAnswer(batch: OutgoingBatch, answer: Attempt & { kind: 'answer' }, attempts: number): BatchResult {
  const n = batch.records.length;
  if (answer.status < 200 || answer.status >= 300) {
    return failed(batch, answer.status, attempts, `The server answered ${answer.status}: ${messageOf(answer.text)}`);
  }
  let json: BatchAnswer = {};
  try {
    json = JSON.parse(answer.text) as BatchAnswer;
  } catch {
    // A 2xx without the counts (not Sluice's batch endpoint?): every record taken as accepted.
  }
  const accepted = typeof json.accepted === 'number' ? Math.min(n, json.accepted) : n;
  const rejected = n - accepted;
  // The positions are the endpoint's: they are the records' own when it cut as many as were sent.
  const matched = typeof json.rejected === 'number' && accepted + json.rejected === n;
  const rejections: Rejection[] = [];
  for (const e of Array.isArray(json.errors) ? json.errors : []) {
    if (typeof e?.index !== 'number') continue;
    const rejection: Rejection = { batch: batch.seq, index: e.index, reason: typeof e.message === 'string' ? e.message : 'rejected' };
    if (matched) rejection.record = batch.records[e.index];
    rejections.push(rejection);
  }
  return { batch: batch.seq, records: n, accepted, rejected, rejections, status: answer.status, attempts };
}

function failed(batch: OutgoingBatch, status: number, attempts: number, error: string): BatchResult {
  const rejections = batch.records.map((record, index): Rejection => ({ batch: batch.seq, index, record, reason: error }));
  return { batch: batch.seq, records: batch.records.length, accepted: 0, rejected: batch.records.length, rejections, status, attempts, error };
}

/** gzip with the platform's CompressionStream (Node 18+, every current browser). */
async function gzip(text: string): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
