/**
 * The e2e bench's load generators (bench/e2e.ts): batched clients as exporters and connectors
 * behave, sending until `amount` batches were accepted or for `duration` seconds, and waiting out
 * each 429's or 503's Retry-After (back-pressure, docs/ingestion.md, "Ingestion and the record's path").
 *
 * - `feedRaw`: `connections` loops, each POSTing the same prepared body again and again (the OTLP
 *   path's sender; the batch path's with `--batch-sender raw`): no work a record.
 * - `feedWithClient`: the batch path through the client library (@sluice/client): the records one
 *   by one into `sendAsync`, batched by it (`maxBatchRecords` the prepared body's count),
 *   `concurrency` = connections, retried by it; what a user's producer does.
 */
import { createClient } from '@sluice/client';
import type { BatchPath } from './e2e-data.js';
import { sleep } from './util.js';

export interface FeedResult {
  /** Records the server acknowledged. */
  acceptedRecords: number;
  /** Answers 429 and 503 waited out and sent again, by status ("0": no answer). */
  refused: Record<string, number>;
  problems: string[];
}

export type FeedUntil = { amount: number } | { duration: number };

/** The prepared body, `connections` loops; a request of `recordsPerRequest` records each. */
export async function feedRaw(
  url: string,
  contentType: string,
  body: Buffer,
  path: BatchPath,
  recordsPerRequest: number,
  connections: number,
  until: FeedUntil,
): Promise<FeedResult> {
  const deadline = 'duration' in until ? performance.now() + until.duration * 1000 : Infinity;
  const amount = 'amount' in until ? until.amount : Infinity;
  let started = 0;
  let accepted = 0;
  const refused: Record<string, number> = {};
  const problems: string[] = [];
  const client = async (): Promise<void> => {
    while (started < amount && performance.now() < deadline && problems.length === 0) {
      started++;
      for (;;) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body, signal: AbortSignal.timeout(60_000) });
        const text = Buffer.from(await res.arrayBuffer()).toString('latin1');
        if (res.status === 429 || res.status === 503) {
          refused[res.status] = (refused[res.status] ?? 0) + 1;
          await sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
          continue;
        }
        if (res.status !== 200 || (path === 'otlp' && text.length !== 0)) problems.push(`answer ${res.status}: ${text.slice(0, 300)}`);
        else accepted++;
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  return { acceptedRecords: accepted * recordsPerRequest, refused, problems };
}

/**
 * The records through the client library: `records` sent in turn, again and again, `amount`
 * times all of them or for `duration` seconds. The records are the bench's own JSON text
 * (validate: false: the client sends them unchecked); `gzip` as the client's default, off by
 * default here since client and server share a loopback and two cores.
 */
export async function feedWithClient(
  url: string,
  records: readonly string[],
  connections: number,
  until: FeedUntil,
  gzip: boolean,
): Promise<FeedResult> {
  const problems: string[] = [];
  const client = createClient({
    url,
    maxBatchRecords: records.length,
    concurrency: connections,
    // Room for every connection's batch and the next one: the producer runs ahead no further.
    maxQueueRecords: 2 * connections * records.length,
    compression: gzip ? 'gzip' : 'none',
    validate: false,
    retry: { giveUpAfterMs: Infinity },
    requestTimeoutMs: 60_000,
    onBatch: (batch) => {
      if (batch.rejected > 0 && problems.length < 10) problems.push(`batch ${batch.batch}: ${batch.rejected} rejected (status ${batch.status}): ${batch.error ?? batch.rejections[0]?.reason}`);
    },
  });
  const deadline = 'duration' in until ? performance.now() + until.duration * 1000 : Infinity;
  const amount = 'amount' in until ? until.amount : Infinity;
  for (let round = 0; round < amount && performance.now() < deadline && problems.length === 0; round++) {
    for (const record of records) await client.sendAsync(record);
  }
  const result = await client.close();
  const stats = client.stats();
  return { acceptedRecords: result.accepted, refused: stats.retries, problems };
}
