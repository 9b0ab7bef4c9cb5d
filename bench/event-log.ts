import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import { LmdbEventLog } from '../src/adapters/event-log/lmdb-log.js';
import type { IngestRecord } from '../src/model/record.js';

/**
 * Appends per second to the embedded event log (LmdbEventLog), one record per append, each
 * awaiting `durable` (a synced LMDB commit): with N concurrent appenders (group commit) and
 * with one appender at a time (one commit per append); concurrent appenders spread over
 * `--topics` topics. Baseline, same run and same disk: bare lmdb-js puts of a 300-byte value
 * into one database with the same sync settings, awaited the same way (it imports lmdb
 * directly: it measures what the adapter adds). Medians of alternating rounds.
 *
 * `npx tsx bench/event-log.ts [--concurrency 1000] [--records 50000] [--serial 2000] [--topics 1]
 * [--rounds 3]`; `eventLogBench` has the signature of bench/run.ts's benches.
 */
export async function eventLogBench(args: string[]): Promise<Record<string, unknown>> {
  const opt = (name: string, dflt: number): number => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) || dflt : dflt;
  };
  const concurrency = opt('--concurrency', 1000);
  const records = opt('--records', 50_000);
  const serial = opt('--serial', 2000);
  const topics = opt('--topics', 1);
  const record: IngestRecord = {
    receivedAt: new Date(),
    ip: '203.0.113.7',
    headers: { 'Content-Type': 'application/json', 'User-Agent': 'bench/1.0', 'X-Request-Id': '0190a5c4-6d3e-7c2a-9f1b-3c5d7e9f1a2b' },
    body: Buffer.from(JSON.stringify({ event: 'page_view', user: 12345, path: '/pricing', ts: Date.now(), props: { a: 'x'.repeat(180) } })),
    signal: '',
  };

  const rounds = opt('--rounds', 3);
  const value = Buffer.alloc(300, 'x');
  const results = { logConcurrent: [] as number[], logSerial: [] as number[], rawConcurrent: [] as number[], rawSerial: [] as number[] };
  // Alternating rounds, fresh files each time, so that machine noise hits both alike.
  for (let round = 0; round < rounds; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-log-'));
    try {
      const log = LmdbEventLog.open(join(dir, 'log'), {});
      let n = 0;
      const append = (): Promise<void> => log.append(`1.1.bench-${n++ % topics}`, [record]).durable;
      results.logConcurrent.push(await concurrent(append, concurrency, records));
      results.logSerial.push(await oneAtATime(() => log.append('1.1.bench-0', [record]).durable, serial));
      await log.close();

      const root = open({ path: join(dir, 'raw'), overlappingSync: false, compression: false, encoding: 'binary' });
      let offset = 0;
      const put = async (): Promise<void> => {
        await root.put(['1.1.bench', ++offset], value);
      };
      results.rawConcurrent.push(await concurrent(put, concurrency, records));
      results.rawSerial.push(await oneAtATime(put, serial));
      await root.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    process.stdout.write(
      `round ${round + 1}/${rounds}: event log ${results.logConcurrent[round]} appends/s with ${concurrency} appenders, ` +
        `${results.logSerial[round]} one at a time; bare lmdb-js ${results.rawConcurrent[round]} / ${results.rawSerial[round]} puts/s\n`,
    );
  }
  const logConcurrent = median(results.logConcurrent);
  const logSerial = median(results.logSerial);
  const rawConcurrent = median(results.rawConcurrent);
  const rawSerial = median(results.rawSerial);
  return {
    concurrency,
    records,
    topics,
    rounds,
    appendsPerSecConcurrent: logConcurrent,
    appendsPerSecOneAtATime: logSerial,
    baselinePutsPerSecConcurrent: rawConcurrent,
    baselinePutsPerSecOneAtATime: rawSerial,
    ratioConcurrent: round2(logConcurrent / rawConcurrent),
    ratioOneAtATime: round2(logSerial / rawSerial),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function concurrent(op: () => Promise<void>, workers: number, total: number): Promise<number> {
  let left = total;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (left > 0) {
        left--;
        await op();
      }
    }),
  );
  return Math.round(total / ((performance.now() - started) / 1000));
}

async function oneAtATime(op: () => Promise<void>, total: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < total; i++) await op();
  return Math.round(total / ((performance.now() - started) / 1000));
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await eventLogBench(process.argv.slice(2));
  process.stdout.write(JSON.stringify({ bench: 'event-log', ...result }) + '\n');
}
