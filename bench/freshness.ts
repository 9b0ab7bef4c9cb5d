/**
 * `npm run bench -- freshness`: how long after its `200 OK` an event is a row in its table, with
 * short triggers (issue 24 item 5, "rows within seconds").
 *
 * Each target gets a fresh `node dist/main.js serve` whose floors allow the interval
 * (`--upload-min-interval` and `--import-min-interval`; `--check-interval` follows them unless
 * given), one HTTP source
 * and one sink (two `path` columns) whose upload and import triggers are that interval. One
 * client sends single events (`{"n": k, ...}`) at a steady rate, one request at a time, and
 * notes when each was acknowledged. A poller counts the table's rows through the SQL endpoint
 * every `--poll` ms: the log, the sink and the imports keep the events' order, so when the count
 * reaches c the first c events are visible (checked at the end: every n once, none missing).
 * An event's freshness is the first poll that saw it minus its acknowledgement (the poll period
 * is the measurement's resolution, printed).
 *
 * Beside it, in the same run: the floor the triggers set (an event waits for its file's import
 * trigger, on average half the interval for a steady stream) and the cost of each import (the
 * server's `sluice_import_duration_seconds`: files, mean seconds a file, rows a file).
 *
 * `npm run bench -- freshness [--target duckdb,postgres] [--interval 1s] [--check-interval <duration>]
 *   [--duration 30] [--rate 50] [--poll 50]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { parseDuration } from '../src/pipeline/units.js';
import { apiCall, freePort, round2, ServerProcess, serveNodeFlags, sleep, waitTask } from './util.js';

type TargetName = 'duckdb' | 'postgres';

const TOKEN = 'bench';
const SOURCES = '/v1/branches/default/sources';
const TABLE = '"in.c-fresh"."events"';

interface FreshnessRun {
  events: number;
  /** Seconds from each event's OK to the first poll that saw its row, sorted. */
  latencies: number[];
  imports: { files: number; meanSec: number; rowsPerFile: number };
  problems: string[];
}

export async function freshnessBench(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({
    args: argv,
    options: {
      target: { type: 'string', default: 'duckdb,postgres' },
      interval: { type: 'string', default: '1s' },
      'check-interval': { type: 'string' },
      duration: { type: 'string', default: '30' },
      rate: { type: 'string', default: '50' },
      poll: { type: 'string', default: '50' },
    },
  });
  const targets = values.target.split(',') as TargetName[];
  for (const t of targets) if (t !== 'duckdb' && t !== 'postgres') throw new Error(`--target: duckdb or postgres, not ${t}`);
  const intervalSec = seconds(values.interval);
  const opts = { interval: values.interval, checkInterval: values['check-interval'], durationSec: Number(values.duration), rate: Number(values.rate), pollMs: Number(values.poll) };
  const main = resolve('dist/main.js');
  const work = mkdtempSync(join(tmpdir(), 'sluice-bench-freshness-'));
  process.stdout.write(
    `freshness: targets ${targets.join(', ')}; triggers ${opts.interval} (upload and import), checked every ${opts.checkInterval ?? "the server's default (a fifth of the import floor below 5s)"}; ` +
      `${opts.rate} events/s for ${opts.durationSec} s, one a request; rows counted every ${opts.pollMs} ms; ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );
  const results: Record<string, unknown> = {};
  const problems: string[] = [];
  let postgres: TestPostgres | undefined;
  try {
    for (const target of targets) {
      if (target === 'postgres') postgres = await startTestPostgres();
      const url = postgres ? await postgres.createDatabase('fresh') : undefined;
      const dir = mkdtempSync(join(work, `${target}-`));
      const run = await freshnessRun(main, dir, url, opts);
      const p = (q: number) => round2(run.latencies[Math.min(run.latencies.length - 1, Math.floor(q * run.latencies.length))]);
      const summary = {
        events: run.events,
        p50Seconds: p(0.5),
        p95Seconds: p(0.95),
        p99Seconds: p(0.99),
        maxSeconds: round2(run.latencies[run.latencies.length - 1]),
        // The baseline: what the triggers alone make an event of a steady stream wait on average.
        triggerFloorSeconds: round2(intervalSec / 2),
        importedFiles: run.imports.files,
        importMsPerFile: round2(run.imports.meanSec * 1000),
        rowsPerFile: round2(run.imports.rowsPerFile),
        resolutionSeconds: opts.pollMs / 1000,
      };
      results[target] = summary;
      problems.push(...run.problems.map((x) => `${target}: ${x}`));
      process.stdout.write(
        `${target}: ${run.events} events; OK to row p50 ${summary.p50Seconds} s, p95 ${summary.p95Seconds} s, p99 ${summary.p99Seconds} s, max ${summary.maxSeconds} s ` +
          `(the triggers alone: ${summary.triggerFloorSeconds} s on average); ${summary.importedFiles} imports, ${summary.importMsPerFile} ms and ${summary.rowsPerFile} rows a file\n`,
      );
      for (const x of run.problems) process.stdout.write(`  PROBLEM: ${x}\n`);
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await postgres?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  return { interval: opts.interval, checkInterval: opts.checkInterval ?? 'default', ratePerSecond: opts.rate, results, problems };
}

async function freshnessRun(
  main: string,
  dir: string,
  postgresUrl: string | undefined,
  o: { interval: string; checkInterval: string | undefined; durationSec: number; rate: number; pollMs: number },
): Promise<FreshnessRun> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = new ServerProcess([...serveNodeFlags(), main, 'serve'], {
    SLUICE_PORT: String(port),
    SLUICE_OTLP_GRPC_PORT: '0',
    SLUICE_HOST: '127.0.0.1',
    SLUICE_DATA_DIR: join(dir, 'data'),
    SLUICE_MASTER_TOKEN: TOKEN,
    SLUICE_LOG_LEVEL: 'warn',
    SLUICE_UPLOAD_MIN_INTERVAL: o.interval,
    SLUICE_IMPORT_MIN_INTERVAL: o.interval,
    ...(o.checkInterval ? { SLUICE_CHECK_INTERVAL: o.checkInterval } : {}),
    ...(postgresUrl ? { SLUICE_TARGET_URL: postgresUrl } : {}),
  });
  const problems: string[] = [];
  try {
    await server.ready(base);
    const ingest = await setUp(base, o.interval);
    const acked: number[] = [];
    const seen: number[] = [];
    let sending = true;
    const poller = (async () => {
      // Until the load is over and every acknowledged event was seen (or 60 s more went by).
      let deadline = Infinity;
      while (seen.length < acked.length || sending) {
        if (!sending && deadline === Infinity) deadline = performance.now() + 60_000;
        if (performance.now() > deadline) break;
        const count = await rowCount(base);
        const now = performance.now();
        while (seen.length < count) seen.push(now);
        await sleep(o.pollMs);
      }
    })();
    const total = Math.round(o.durationSec * o.rate);
    const t0 = performance.now();
    for (let k = 0; k < total; k++) {
      const due = t0 + (k * 1000) / o.rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const res = await fetch(ingest, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: k, sentAt: new Date().toISOString() }) });
      await res.arrayBuffer();
      if (res.status !== 200) {
        problems.push(`event ${k} answered ${res.status}`);
        break;
      }
      acked.push(performance.now());
    }
    sending = false;
    await poller;
    if (seen.length < acked.length) problems.push(`${acked.length - seen.length} of ${acked.length} acknowledged events were not in the table 60 s after the load`);
    const check = (await apiCall(base, TOKEN, 'POST', '/v2/storage/sql', { query: `SELECT count(*) AS n, count(DISTINCT n) AS d, min(CAST(n AS BIGINT)) AS lo, max(CAST(n AS BIGINT)) AS hi FROM ${TABLE}` })) as { rows: unknown[] };
    const [n, d, lo, hi] = cells(check.rows[0]).map(Number);
    if (n !== acked.length || d !== n || lo !== 0 || hi !== acked.length - 1) problems.push(`the table holds ${n} rows (${d} distinct, n ${lo}..${hi}) for ${acked.length} events`);
    const latencies = acked.slice(0, seen.length).map((t, i) => (seen[i] - t) / 1000).sort((a, b) => a - b);
    return { events: acked.length, latencies, imports: await importCost(base), problems };
  } finally {
    await server.stop();
  }
}

/** Creates the source and its sink with short triggers; returns the ingestion URL. */
async function setUp(base: string, interval: string): Promise<string> {
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', SOURCES, { sourceId: 'fresh', name: 'fresh', type: 'http' }));
  const columns = [
    { type: 'path', name: 'n', path: 'n' },
    { type: 'path', name: 'sentAt', path: 'sentAt', rawString: true },
  ];
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', `${SOURCES}/fresh/sinks`, { sinkId: 'events', name: 'events', type: 'table', table: { type: 'keboola', tableId: 'in.c-fresh.events', mapping: { columns } } }));
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `${SOURCES}/fresh/sinks/events/settings`, {
    settings: [
      { key: 'storage.level.staging.upload.trigger.interval', value: interval },
      { key: 'storage.level.target.import.trigger.interval', value: interval },
    ],
  }));
  const source = (await apiCall(base, TOKEN, 'GET', `${SOURCES}/fresh`)) as { http: { url: string } };
  return base + new URL(source.http.url).pathname;
}

async function rowCount(base: string): Promise<number> {
  const answer = (await apiCall(base, TOKEN, 'POST', '/v2/storage/sql', { query: `SELECT count(*) AS n FROM ${TABLE}` })) as { rows: unknown[] };
  return Number(cells(answer.rows[0])[0]);
}

/** Imports the server made and their mean duration, from its metrics. */
async function importCost(base: string): Promise<{ files: number; meanSec: number; rowsPerFile: number }> {
  const text = await (await fetch(`${base}/metrics`, { headers: { 'x-storageapi-token': TOKEN } })).text();
  const sum = (name: string) => text.split('\n').filter((l) => l.startsWith(name)).reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const files = sum('sluice_import_duration_seconds_count');
  const rows = sum('sluice_table_rows_imported_total');
  return { files, meanSec: files > 0 ? sum('sluice_import_duration_seconds_sum') / files : NaN, rowsPerFile: files > 0 ? rows / files : NaN };
}

function seconds(duration: string): number {
  const ms = parseDuration(duration);
  if (ms === undefined) throw new Error(`--interval: a duration such as 1s or 500ms, not ${duration}`);
  return ms / 1000;
}

/** A row of the SQL endpoint's answer as an array of values. */
function cells(row: unknown): unknown[] {
  return Array.isArray(row) ? row : Object.values(row as object);
}
