/**
 * `npm run bench -- client [--rounds 3] [--records 200000]`: the client library's own CPU a record
 * (@sluice/client), on the e2e bench's records (flattened OTLP log records, about 565 bytes), with
 * a fetch that answers at once (no network, no server): the queue, batching, framing and the
 * records' checks, beside the baseline of the same records joined into NDJSON bodies by hand.
 * Cases: strings unchecked (`validate: false`), strings checked (the default), objects
 * (JSON.stringify), and strings gzipped (CompressionStream). Medians of the rounds.
 */
import { parseArgs } from 'node:util';
import { createClient, type ClientOptions } from '@sluice/client';
import { ndjsonBody } from './e2e-data.js';
import { median, round2 } from './util.js';

const BATCH = 500;

export async function clientBench(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args: argv, options: { rounds: { type: 'string', default: '3' }, records: { type: 'string', default: '200000' } } });
  const rounds = Number(values.rounds);
  const total = Math.ceil(Number(values.records) / BATCH) * BATCH;
  const lines = ndjsonBody(BATCH).toString('utf8').trim().split('\n');
  const objects = lines.map((l) => JSON.parse(l) as unknown);
  const cases: Array<[string, Partial<ClientOptions>, readonly unknown[]]> = [
    ['strings, validate false', { validate: false, compression: 'none' }, lines],
    ['strings, validate true (default)', { compression: 'none' }, lines],
    ['objects', { compression: 'none' }, objects],
    ['strings, validate false, gzip', { validate: false }, lines],
  ];
  const results: Record<string, number> = {};
  const baseline: number[] = [];
  for (const [name, options, records] of cases) {
    const perRound: number[] = [];
    for (let round = 0; round < rounds; round++) {
      perRound.push(await clientRun(options, records, total));
      if (baseline.length < rounds) baseline.push(joinRun(lines, total));
    }
    results[name] = round2(median(perRound));
    process.stdout.write(`${name}: ${results[name]} µs a record (rounds ${perRound.map(round2).join(', ')})\n`);
  }
  process.stdout.write(`baseline (the records joined into NDJSON bodies): ${round2(median(baseline))} µs a record\n`);
  return { recordBytes: Math.round(lines.reduce((n, l) => n + l.length, 0) / lines.length), records: total, cpuMicrosPerRecord: results, baselineCpuMicrosPerRecord: round2(median(baseline)) };
}

/** A fetch that answers every batch as Sluice does when it keeps all its records. */
const answerAtOnce = (async () => new Response(`{"accepted":${BATCH},"rejected":0,"errors":[]}`, { status: 200 })) as unknown as typeof fetch;

async function clientRun(options: Partial<ClientOptions>, records: readonly unknown[], total: number): Promise<number> {
  const client = createClient({ url: 'http://127.0.0.1:1/stream/1/bench/secret', fetch: answerAtOnce, maxBatchRecords: BATCH, concurrency: 8, ...options });
  const cpu = process.cpuUsage();
  for (let sent = 0; sent < total; sent += records.length) for (const r of records) await client.sendAsync(r);
  const result = await client.close();
  const used = process.cpuUsage(cpu);
  if (result.accepted !== total) throw new Error(`the client reported ${result.accepted} of ${total} records accepted`);
  return (used.user + used.system) / total;
}

function joinRun(lines: readonly string[], total: number): number {
  const cpu = process.cpuUsage();
  let bytes = 0;
  for (let sent = 0; sent < total; sent += lines.length) bytes += (lines.join('\n') + '\n').length;
  const used = process.cpuUsage(cpu);
  if (bytes === 0) throw new Error('nothing joined');
  return (used.user + used.system) / total;
}
