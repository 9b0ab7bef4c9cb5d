/**
 * `npm run bench -- e2e`: records/s from the first request until every acknowledged record is a
 * row in each table, beside a baseline measured in the same run, and where the server's CPU went.
 *
 * Each case (a target × a batch path) gets a fresh `node dist/main.js serve` (the node flags of
 * `npm start`, its own data directory; on PostgreSQL a database of its own on a throwaway server,
 * test/helpers/postgres.ts) with one source and two sinks: `paths` (five `path` columns) and
 * `template` (two `path` columns and a Jsonnet template), upload interval 1s and import interval
 * 30s (the shortest the settings accept). Batched clients (retrying a 429 or 503 after its Retry-After, as exporters do) send a fixed number of
 * records, on either batch path:
 *
 *  - otlp:  POST {otlp.url}/v1/logs, protobuf ExportLogsServiceRequest, 512 log records each;
 *  - batch: POST {http.url}/batch, NDJSON of 500 records (the same records, flattened), sent
 *    through the client library @sluice/client (records one by one, batched, retried by it;
 *    `--client-gzip` gzips its batches), or with `--batch-sender raw` as the OTLP path is sent:
 *    the prepared body POSTed again and again (bench/e2e-feed.ts).
 *
 * The answers are checked (200, and for OTLP an empty body: no partial success), the tables
 * counted (COUNT(*) through POST /v2/storage/sql) until each holds every acknowledged record;
 * more rows than acknowledged records is a doubling, fewer when the wait ends a loss. The
 * `paths` table's rows, grouped by value, are compared with the baseline's.
 *
 * The baseline (bench/e2e-baseline.ts) is a plain Node process doing the least work on the same
 * request bodies into the same target. With `--profile` each case runs again with the server
 * under `--cpu-prof` and the profile is folded into stages (bench/profile-stages.ts), CPU µs per
 * record; the threads no profile sees (libuv's pool: gzip, file writes; DuckDB's) come from /proc.
 *
 * `npm run bench -- e2e [--target duckdb|postgres|duckdb,postgres] [--paths otlp,batch]
 *   [--records 768000] [--duration <s>] [--connections 8] [--rounds 1] [--profile]
 *   [--keep-profiles <dir>] *   [--profile-records 256000] [--keep-profiles <dir>] [--import-min-interval <duration>] [--drain-timeout 180]
 *   [--batch-sender client|raw] [--client-gzip]`
 *
 * With `--client telemetrygen` the load is the Collector project's telemetrygen instead, beside
 * the Collector itself as the baseline (bench/e2e-otlp.ts):
 * `npm run bench -- e2e --client telemetrygen [--protocol grpc,http] [--duration 20] [--rounds 1] [--profile]
 *   [--keep-profiles <dir>] [--workers 4] [--batch-size 100] [--rate 0] [--import-min-interval 2s] [--drain-timeout 180]`
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify, parseArgs } from 'node:util';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { otlpBody, ndjsonBody, PATH_COLUMNS, TEMPLATE_COLUMNS, type BatchPath } from './e2e-data.js';
import { groupQuery, type BaselineOptions, type BaselineResult } from './e2e-baseline.js';
import { foldProfiles, perRecord } from './profile-stages.js';
import { feedRaw, feedWithClient } from './e2e-feed.js';
import { telemetrygenE2eBench } from './e2e-otlp.js';
import type { Protocol } from './otlp-clients.js';
import { apiCall, freePort, median, mainThreadCpuSec, procCpuSec, residentBytes, round2, ServerProcess, serveNodeFlags, sleep, waitTask } from './util.js';

type TargetName = 'duckdb' | 'postgres';

interface Settings {
  records: number;
  duration?: number;
  connections: number;
  importMinInterval?: string;
  drainTimeoutSec: number;
  /** Where to copy the `.cpuprofile` files of profiled runs (one folder per case), to read them in a tool. */
  keepProfiles?: string;
  /** The batch path's sender: the client library (default), or the prepared body POSTed again and again. */
  batchSender: 'client' | 'raw';
  /** The client library gzips its batches. */
  clientGzip: boolean;
}

interface SluiceRun {
  acknowledged: number;
  /** The load generator's CPU (this process's) while it sent: what the sender costs a record. */
  senderCpuSec: number;
  /** Answers 429 and 503 (back-pressure) the clients waited out and sent again, by status. */
  refusedAnswers: Record<string, number>;
  /**
   * The server's own resident memory (RssAnon, MiB) at the start, its most, when the load
   * stopped, at the end; and the most of the mapped files' pages it had resident (the LMDB log's).
   */
  memory: { startMb: number; maxMb: number; atLoadEndMb: number; endMb: number; mappedFilesMaxMb: number; eachMinuteMb: number[] };
  loadSec: number;
  /** From the first request until both tables held every acknowledged record. */
  totalSec: number;
  /** Records the sinks had mapped (statistics) and rows in the tables when the load stopped. */
  mappedAtStop: Record<string, number>;
  rowsAtStop: Record<string, number>;
  rowsAtEnd: Record<string, number>;
  /** Seconds after the load until each table held every acknowledged record (NaN: never). */
  caughtUpSec: Record<string, number>;
  /** Seconds after the load until each sink had mapped every acknowledged record (NaN: never). */
  mappedSec: Record<string, number>;
  serverCpuSec: number;
  /** Of serverCpuSec: the main thread's; the rest is the other threads' (render workers, libuv's pool, DuckDB, GC helpers). */
  mainThreadCpuSec: number;
  /** The server process's CPU from its start to the end of the run (what a profile covers). */
  serverLifeCpuSec: number;
  groups: string[];
  problems: string[];
}

const TOKEN = 'bench';
const SINKS = { paths: PATH_COLUMNS, template: TEMPLATE_COLUMNS } as const;
const SINK_SETTINGS = [
  { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
  { key: 'storage.level.target.import.trigger.interval', value: '30s' },
];
const BATCH: Record<BatchPath, number> = { otlp: 512, batch: 500 };

export async function e2eBench(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({
    args: argv,
    options: {
      target: { type: 'string', default: 'duckdb' },
      paths: { type: 'string', default: 'otlp,batch' },
      records: { type: 'string', default: '768000' },
      duration: { type: 'string' },
      connections: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '1' },
      profile: { type: 'boolean', default: false },
      'profile-records': { type: 'string', default: '256000' },
      'keep-profiles': { type: 'string' },
      'import-min-interval': { type: 'string' },
      'drain-timeout': { type: 'string', default: '180' },
      'batch-sender': { type: 'string', default: 'client' },
      'client-gzip': { type: 'boolean', default: false },
      // The telemetrygen mode (bench/e2e-otlp.ts).
      client: { type: 'string', default: 'library' },
      protocol: { type: 'string', default: 'grpc,http' },
      workers: { type: 'string', default: '4' },
      'batch-size': { type: 'string', default: '100' },
      rate: { type: 'string', default: '0' },
    },
  });
  if (values.client !== 'library' && values.client !== 'telemetrygen') throw new Error(`--client: library or telemetrygen, not ${values.client}`);
  if (values.client === 'telemetrygen') {
    const protocols = values.protocol.split(',') as Protocol[];
    for (const p of protocols) if (p !== 'grpc' && p !== 'http') throw new Error(`--protocol: grpc or http, not ${p}`);
    const main = resolve('dist/main.js');
    if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');
    return telemetrygenE2eBench(main, {
      protocols,
      durationSec: Number(values.duration ?? 20),
      rounds: Number(values.rounds),
      workers: Number(values.workers),
      batchSize: Number(values['batch-size']),
      rate: Number(values.rate),
      importInterval: values['import-min-interval'] ?? '2s',
      drainTimeoutSec: Number(values['drain-timeout']),
      profile: values.profile || values['keep-profiles'] !== undefined,
      keepProfiles: values['keep-profiles'],
    });
  }
  const targets = values.target.split(',') as TargetName[];
  const paths = values.paths.split(',') as BatchPath[];
  for (const t of targets) if (t !== 'duckdb' && t !== 'postgres') throw new Error(`--target: duckdb or postgres, not ${t}`);
  for (const p of paths) if (p !== 'otlp' && p !== 'batch') throw new Error(`--paths: otlp or batch, not ${p}`);
  if (values['batch-sender'] !== 'client' && values['batch-sender'] !== 'raw') throw new Error(`--batch-sender: client or raw, not ${values['batch-sender']}`);
  const settings: Settings = {
    records: Number(values.records),
    duration: values.duration === undefined ? undefined : Number(values.duration),
    connections: Number(values.connections),
    importMinInterval: values['import-min-interval'],
    drainTimeoutSec: Number(values['drain-timeout']),
    keepProfiles: values['keep-profiles'],
    batchSender: values['batch-sender'],
    clientGzip: values['client-gzip'],
  };
  const rounds = Number(values.rounds);
  const main = resolve('dist/main.js');
  if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');
  const work = mkdtempSync(join(tmpdir(), 'sluice-bench-e2e-'));
  const bodies: Record<BatchPath, Buffer> = { otlp: otlpBody(BATCH.otlp), batch: ndjsonBody(BATCH.batch) };
  for (const p of paths) writeFileSync(join(work, `${p}.body`), bodies[p]);
  process.stdout.write(
    `e2e: targets ${targets.join(', ')}, paths ${paths.join(', ')}; ${settings.duration ? `${settings.duration} s of load` : `${settings.records} records`} per case, ` +
      `${settings.connections} connections; batch sender ${settings.batchSender}${settings.batchSender === 'client' ? ` (gzip ${settings.clientGzip ? 'on' : 'off'})` : ''}; otlp ${BATCH.otlp} records = ${bodies.otlp.length} bytes a request, batch ${BATCH.batch} records = ${bodies.batch.length} bytes; ` +
      `import floor ${settings.importMinInterval ?? "the server's default"}; ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );

  let postgres: TestPostgres | undefined;
  const results: Record<string, Record<string, unknown>> = {};
  const problems: string[] = [];
  try {
    for (const target of targets) {
      if (target === 'postgres') postgres = await startTestPostgres();
      for (const path of paths) {
        const name = `${target}.${path}`;
        const e2e: number[] = [];
        const base: number[] = [];
        const ratios: number[] = [];
        const runs: SluiceRun[] = [];
        for (let round = 0; round < rounds; round++) {
          const dir = mkdtempSync(join(work, `${name}-`));
          try {
            const runSluice = async () => {
              const url = postgres ? await postgres.createDatabase('sluice') : undefined;
              return sluiceRun(main, path, bodies[path], dir, url, settings);
            };
            const runBase = async () => {
              const url = postgres ? await postgres.createDatabase('baseline') : undefined;
              return baselineRun(path, join(work, `${path}.body`), dir, url, settings.records);
            };
            // Alternate which runs first, so that neither always meets the warmer machine.
            let s: SluiceRun;
            let b: BaselineResult;
            if (round % 2 === 0) {
              s = await runSluice();
              b = await runBase();
            } else {
              b = await runBase();
              s = await runSluice();
            }
            const e2eRate = s.acknowledged / s.totalSec;
            const baseRate = b.records / b.seconds;
            if (b.rows !== b.records) s.problems.push(`the baseline loaded ${b.rows} rows of ${b.records} records`);
            // The sink's rows and the baseline's, grouped by value: the same rows, as many times
            // each (with a fixed duration the counts differ: only the distinct rows compare).
            const compared = (groups: string[]) => (settings.duration ? groups.map((g) => g.replace(/,"\d+"\]$/, ']')) : groups);
            if (JSON.stringify(compared(s.groups)) !== JSON.stringify(compared(b.groups))) {
              s.problems.push(`the paths table's rows differ from the baseline's (${s.groups.length} and ${b.groups.length} distinct rows; first ${s.groups[0]} / ${b.groups[0]})`);
            }
            e2e.push(e2eRate);
            base.push(baseRate);
            ratios.push(e2eRate / baseRate);
            runs.push(s);
            problems.push(...s.problems.map((p) => `${name} round ${round + 1}: ${p}`));
            process.stdout.write(
              `${name} round ${round + 1}/${rounds}: end to end ${Math.round(e2eRate)} records/s (${s.acknowledged} records in ${s.totalSec.toFixed(1)} s), ` +
                `acknowledged ${Math.round(s.acknowledged / s.loadSec)} records/s over ${s.loadSec.toFixed(1)} s; when the load stopped mapped ${fmtCounts(s.mappedAtStop)}, ` +
                `rows ${fmtCounts(s.rowsAtStop)}; caught up after ${fmtCounts(s.caughtUpSec, 1)} s more; baseline ${Math.round(baseRate)} records/s ` +
                `(${b.records} in ${b.seconds.toFixed(1)} s); ratio ${round2(e2eRate / baseRate)}; server CPU ${((s.serverCpuSec / s.acknowledged) * 1e6).toFixed(1)} µs a record ` +
                `(main thread ${((s.mainThreadCpuSec / s.acknowledged) * 1e6).toFixed(1)}); the sinks had mapped everything after ${fmtCounts(s.mappedSec, 1)} s; ` +
                `refused (waited out) ${JSON.stringify(s.refusedAnswers)}; server memory (own) ${s.memory.startMb} MiB at the start, at most ${s.memory.maxMb}, ${s.memory.atLoadEndMb} when the load stopped; mapped files' pages at most ${s.memory.mappedFilesMaxMb} MiB; own memory each minute ${s.memory.eachMinuteMb.join(', ')} MiB\n`,
            );
            for (const p of s.problems) process.stdout.write(`  PROBLEM: ${p}\n`);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
        const last = runs[runs.length - 1];
        results[name] = {
          e2eRecordsPerSecond: Math.round(median(e2e)),
          baselineRecordsPerSecond: Math.round(median(base)),
          ratio: round2(median(ratios)),
          // From the first request until both sinks had mapped every record (into their local
          // slices): the pipeline's rate without the wait for the import triggers.
          mappedRecordsPerSecond: Math.round(median(runs.map((r) => r.acknowledged / (r.loadSec + Math.max(...Object.values(r.mappedSec)))))),
          acknowledgedRecordsPerSecond: Math.round(median(runs.map((r) => r.acknowledged / r.loadSec))),
          refusedAnswers: last.refusedAnswers,
          serverMemoryMb: last.memory,
          records: last.acknowledged,
          loadSec: round2(median(runs.map((r) => r.loadSec))),
          backlogAtStop: {
            unmapped: Object.fromEntries(Object.keys(SINKS).map((k) => [k, Math.round(median(runs.map((r) => r.acknowledged - r.mappedAtStop[k])))])),
            notInTable: Object.fromEntries(Object.keys(SINKS).map((k) => [k, Math.round(median(runs.map((r) => r.acknowledged - r.rowsAtStop[k])))])),
          },
          caughtUpSecAfterLoad: Object.fromEntries(Object.keys(SINKS).map((k) => [k, round2(median(runs.map((r) => r.caughtUpSec[k])))])),
          serverCpuMicrosPerRecord: round2(median(runs.map((r) => (r.serverCpuSec / r.acknowledged) * 1e6))),
          mainThreadCpuMicrosPerRecord: round2(median(runs.map((r) => (r.mainThreadCpuSec / r.acknowledged) * 1e6))),
          senderCpuMicrosPerRecord: round2(median(runs.map((r) => (r.senderCpuSec / r.acknowledged) * 1e6))),
          mappedSecAfterLoad: Object.fromEntries(Object.keys(SINKS).map((k) => [k, round2(median(runs.map((r) => r.mappedSec[k])))])),
          perRound: { e2e: e2e.map(Math.round), baseline: base.map(Math.round) },
        };
        if (values.profile) {
          const dir = mkdtempSync(join(work, `${name}-profile-`));
          try {
            const url = postgres ? await postgres.createDatabase('profile') : undefined;
            const profile = await profileRun(main, path, bodies[path], dir, url, { ...settings, records: Number(values['profile-records']), duration: undefined });
            results[name].cpuMicrosPerRecordByStage = profile.stages;
            results[name].profile = profile.about;
            process.stdout.write(`${name} profile (${profile.about.records} records, ${profile.about.profiledThreads} threads profiled), CPU µs a record: ${JSON.stringify(profile.stages)}\n`);
            problems.push(...profile.problems.map((p) => `${name} profile run: ${p}`));
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
      if (postgres) {
        await postgres.stop();
        postgres = undefined;
      }
    }
  } finally {
    await postgres?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const ok = problems.length === 0;
  if (!ok) process.stdout.write(`PROBLEMS:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  return { ok, rounds, connections: settings.connections, batchSender: settings.batchSender, clientGzip: settings.clientGzip, recordsPerCase: settings.duration ? undefined : settings.records, durationSec: settings.duration, importMinInterval: settings.importMinInterval ?? 'default', ...results, problems };
}

function fmtCounts(c: Record<string, number>, digits = 0): string {
  return Object.entries(c).map(([k, v]) => `${k} ${Number.isFinite(v) ? v.toFixed(digits) : 'never'}`).join(', ');
}

function serverEnv(dir: string, port: number, postgresUrl: string | undefined, s: Settings): Record<string, string> {
  return {
    SLUICE_PORT: String(port),
    SLUICE_OTLP_GRPC_PORT: '0',
    SLUICE_HOST: '127.0.0.1',
    SLUICE_DATA_DIR: dir,
    SLUICE_MASTER_TOKEN: TOKEN,
    SLUICE_LOG_LEVEL: 'warn',
    ...(postgresUrl ? { SLUICE_TARGET_URL: postgresUrl } : {}),
    ...(s.importMinInterval ? { SLUICE_IMPORT_MIN_INTERVAL: s.importMinInterval } : {}),
  };
}

/** Creates the source (type otlp or http) and its two sinks; returns the batch path to POST to. */
async function setUp(base: string, path: BatchPath): Promise<string> {
  const sources = '/v1/branches/default/sources';
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', sources, { sourceId: 'bench', name: 'bench', type: path === 'otlp' ? 'otlp' : 'http' }));
  for (const [sinkId, columns] of Object.entries(SINKS)) {
    const sink = { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId: `in.c-bench.${sinkId}`, mapping: { columns } } };
    await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', `${sources}/bench/sinks`, sink));
    await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `${sources}/bench/sinks/${sinkId}/settings`, { settings: SINK_SETTINGS }));
  }
  const source = (await apiCall(base, TOKEN, 'GET', `${sources}/bench`)) as { http?: { url: string }; otlp?: { url: string } };
  return path === 'otlp' ? `${new URL(source.otlp!.url).pathname}/v1/logs` : `${new URL(source.http!.url).pathname}/batch`;
}

async function tableRows(base: string, sinkId: string): Promise<number> {
  const answer = (await apiCall(base, TOKEN, 'POST', '/v2/storage/sql', { query: `SELECT count(*) AS n FROM "in.c-bench"."${sinkId}"` })) as { rows: unknown[] };
  const row = answer.rows[0] as unknown[] | Record<string, unknown>;
  return Number(Array.isArray(row) ? row[0] : row.n);
}

async function tableGroups(base: string): Promise<string[]> {
  const answer = (await apiCall(base, TOKEN, 'POST', '/v2/storage/sql', { query: groupQuery('"in.c-bench"."paths"'), limit: 10000 })) as { rows: unknown[] };
  return answer.rows.map((r) => JSON.stringify((Array.isArray(r) ? r : Object.values(r as object)).map(String)));
}

async function mapped(base: string, sinkId: string): Promise<number> {
  const stats = (await apiCall(base, TOKEN, 'GET', `/v1/branches/default/sources/bench/sinks/${sinkId}/statistics/total`)) as { total?: { recordsCount?: number } };
  return stats.total?.recordsCount ?? 0;
}

/** One timed run: a fresh server, the load, then the wait until both tables hold every record. */
async function sluiceRun(main: string, path: BatchPath, body: Buffer, dir: string, postgresUrl: string | undefined, s: Settings, nodeFlags: string[] = []): Promise<SluiceRun> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = new ServerProcess([...serveNodeFlags(), ...nodeFlags, main, 'serve'], serverEnv(join(dir, 'data'), port, postgresUrl, s));
  const problems: string[] = [];
  try {
    await server.ready(base);
    const url = base + (await setUp(base, path));
    const contentType = path === 'otlp' ? 'application/x-protobuf' : 'application/x-ndjson';
    const cpu0 = procCpuSec(server.pid);
    const main0 = mainThreadCpuSec(server.pid);
    const t0 = performance.now();
    // The server's memory over the run, each second (item 4 of the issue: flat and bounded).
    const rss = [residentBytes(server.pid)];
    const sampler = setInterval(() => rss.push(residentBytes(server.pid)), 1000);
    // A probe first, to fail early with a readable answer; it counts.
    const probe = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
    const probeText = Buffer.from(await probe.arrayBuffer()).toString('latin1');
    if (probe.status !== 200) throw new Error(`probe answered ${probe.status}: ${probeText.slice(0, 300)}`);
    if (path === 'otlp' && probeText.length !== 0) throw new Error(`probe answered a partial success: ${probeText.slice(0, 300)}`);
    if (path === 'batch' && (JSON.parse(probeText) as { accepted?: number }).accepted !== BATCH.batch) throw new Error(`probe answered ${probeText.slice(0, 300)}`);
    const sender0 = process.cpuUsage();
    const until = s.duration ? { duration: s.duration } : { amount: Math.max(0, Math.ceil(s.records / BATCH[path]) - 1) };
    const res = path === 'batch' && s.batchSender === 'client'
      ? await feedWithClient(url, body.toString('utf8').split('\n').filter((line) => line !== ''), s.connections, until, s.clientGzip)
      : await feedRaw(url, contentType, body, path, BATCH[path], s.connections, until);
    const loadSec = (performance.now() - t0) / 1000;
    const senderCpu = process.cpuUsage(sender0);
    problems.push(...res.problems);
    const acknowledged = BATCH[path] + res.acceptedRecords;
    const sinkIds = Object.keys(SINKS);
    const mappedAtStop = Object.fromEntries(await Promise.all(sinkIds.map(async (k) => [k, await mapped(base, k)] as const)));
    const rowsAtStop = Object.fromEntries(await Promise.all(sinkIds.map(async (k) => [k, await tableRows(base, k)] as const)));
    const rowsNow = { ...rowsAtStop };
    const mappedNow = { ...mappedAtStop };
    const caughtUpSec: Record<string, number> = Object.fromEntries(sinkIds.map((k) => [k, rowsNow[k] >= acknowledged ? 0 : NaN]));
    const mappedSec: Record<string, number> = Object.fromEntries(sinkIds.map((k) => [k, mappedNow[k] >= acknowledged ? 0 : NaN]));
    const stopped = performance.now();
    while (sinkIds.some((k) => rowsNow[k] < acknowledged) && performance.now() - stopped < s.drainTimeoutSec * 1000) {
      await sleep(500);
      for (const k of sinkIds) {
        if (mappedNow[k] < acknowledged) {
          mappedNow[k] = await mapped(base, k);
          if (mappedNow[k] >= acknowledged) mappedSec[k] = (performance.now() - stopped) / 1000;
        }
        if (rowsNow[k] >= acknowledged) continue;
        rowsNow[k] = await tableRows(base, k);
        if (rowsNow[k] >= acknowledged) caughtUpSec[k] = (performance.now() - stopped) / 1000;
      }
    }
    const totalSec = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const serverLifeCpuSec = procCpuSec(server.pid);
    const serverCpuSec = serverLifeCpuSec - cpu0;
    const mainCpuSec = mainThreadCpuSec(server.pid) - main0;
    // Anything imported twice shows once the imports have settled: count again a moment later.
    await sleep(1500);
    const rowsAtEnd = Object.fromEntries(await Promise.all(sinkIds.map(async (k) => [k, await tableRows(base, k)] as const)));
    for (const k of sinkIds) {
      if (rowsAtEnd[k] < acknowledged) problems.push(`table ${k} holds ${rowsAtEnd[k]} of ${acknowledged} acknowledged records after waiting ${s.drainTimeoutSec} s (mapped ${await mapped(base, k)})`);
      // With a fixed duration, requests in flight when the load stopped may be kept unanswered.
      const slack = s.duration ? s.connections * BATCH[path] : 0;
      if (rowsAtEnd[k] > acknowledged + slack) problems.push(`table ${k} holds ${rowsAtEnd[k]} rows, more than the ${acknowledged} acknowledged records${slack ? ` and ${slack} in flight` : ''}`);
    }
    const groups = await tableGroups(base);
    if (server.exited) problems.push(`the server exited during the run: ${server.describeExit()}`);
    const mb = (b: number) => Math.round(b / 2 ** 20);
    const atLoadEnd = rss[Math.min(rss.length - 1, Math.round(loadSec))];
    const memory = {
      startMb: mb(rss[0].anon),
      maxMb: mb(Math.max(...rss.map((r) => r.anon))),
      atLoadEndMb: mb(atLoadEnd.anon),
      endMb: mb(rss[rss.length - 1].anon),
      mappedFilesMaxMb: mb(Math.max(...rss.map((r) => r.file))),
      // Whether it stays flat over a long load: the own memory at each minute of the run.
      eachMinuteMb: rss.filter((_, i) => i % 60 === 0).map((r) => mb(r.anon)),
    };
    return { acknowledged, loadSec, totalSec, senderCpuSec: (senderCpu.user + senderCpu.system) / 1e6, refusedAnswers: res.refused, memory, mappedAtStop, rowsAtStop, rowsAtEnd, caughtUpSec, mappedSec, serverCpuSec, mainThreadCpuSec: mainCpuSec, serverLifeCpuSec, groups, problems };
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}${server.exited ? `; the server exited: ${server.describeExit()}` : ''}`, { cause: err });
  } finally {
    await server.stop(120_000);
  }
}

/**
 * A run of its own under `--cpu-prof` (main thread and render workers; the profiles are written
 * when the server exits), folded into stages; the threads no profile covers come from /proc.
 */
async function profileRun(main: string, path: BatchPath, body: Buffer, dir: string, postgresUrl: string | undefined, s: Settings) {
  const profDir = join(dir, 'profiles');
  const run = await sluiceRun(main, path, body, dir, postgresUrl, s, ['--cpu-prof', '--cpu-prof-dir', profDir]);
  const { totals, threads } = foldProfiles(profDir);
  if (s.keepProfiles) cpSync(profDir, join(s.keepProfiles, path), { recursive: true });
  const stages = perRecord(totals, run.acknowledged);
  // The profiles cover the JavaScript threads over the server's life; the CPU the process used
  // beyond them is the threads that run no JavaScript (libuv's pool: gzip and file writes;
  // DuckDB's; V8's GC helpers): /proc cannot tell them apart (Node names every thread "node").
  const profiled = [...totals.values()].reduce((a, b) => a + b, 0);
  const unprofiled = run.serverLifeCpuSec * 1e6 - profiled;
  return {
    // Negative when the profiles counted waits of a JavaScript thread (a blocking call) as its time.
    stages: { ...stages, 'process CPU beyond the profiles (threads without JavaScript: libuv pool, DuckDB, GC helpers)': round2(unprofiled / run.acknowledged) },
    about: {
      records: run.acknowledged,
      profiledThreads: threads,
      profiledMicrosPerRecord: round2(profiled / run.acknowledged),
      serverLifeCpuMicrosPerRecord: round2((run.serverLifeCpuSec * 1e6) / run.acknowledged),
    },
    problems: run.problems,
  };
}

async function baselineRun(path: BatchPath, bodyFile: string, dir: string, postgresUrl: string | undefined, records: number): Promise<BaselineResult> {
  const options: BaselineOptions = { path, bodyFile, requests: Math.ceil(records / BATCH[path]), dir, postgresUrl };
  // A process of its own, with the node flags of `npm start` and tsx's loader (this process's).
  const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv, ...serveNodeFlags(), resolve('bench/e2e-baseline.ts'), JSON.stringify(options)], {
    maxBuffer: 64 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as BaselineResult;
}
