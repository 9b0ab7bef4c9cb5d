/**
 * `npm run bench -- e2e --client telemetrygen [--protocol grpc,http]`: the e2e bench with the
 * Collector project's load generator, telemetrygen (a client nobody here wrote), as the load:
 * OTLP logs over gRPC or HTTP into an OTLP source with its default logs sink (short triggers:
 * upload 1 s, import at the import floor, 2 s unless `--import-min-interval` says otherwise), and,
 * in the same run, into the OpenTelemetry Collector (otlp receiver -> batch -> file exporter,
 * bench/otlp-clients.ts's configuration): the peer baseline, on the same protocol and load.
 *
 * Each case gets a fresh server process; telemetrygen sends for `--duration` seconds (`--workers`,
 * `--batch-size`, `--rate` records a second per worker, 0: unthrottled). Every 500 ms the bench
 * reads what the server has accepted and what has landed:
 *
 *  - Sluice: accepted = `sluice_ingest_records_total` of the source (in the event log,
 *    acknowledged), landed = `COUNT(*)` of the logs table (rows a query sees);
 *  - the Collector: accepted = `otelcol_receiver_accepted_log_records`, landed =
 *    `otelcol_exporter_sent_log_records` (written to the file by the file exporter).
 *
 * until every accepted record has landed (or `--drain-timeout`). Reported per case:
 *  - landed records/s: all accepted records / seconds from the first send until the last landed;
 *  - accepted records/s over the load;
 *  - latency to land: for each tenth of the records (10 %, 20 %, ... 100 %), the time from when
 *    the server had accepted that many until that many had landed; the median and the most;
 *  - CPU seconds per 100k records (the server process, all its threads, /proc, from the first
 *    send until the last landed) and telemetrygen's; the most resident anonymous memory (RssAnon).
 * Figures are medians over the rounds (the order of the cases rotates every round); ratios are
 * Sluice over the Collector on the same protocol, each round's pair, median.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CollectorProcess, ensureOtelTools, startTelemetrygen, type OtelTools } from '../test/helpers/otel-tools.js';
import { metricValue } from '../test/helpers/prometheus.js';
import { collectorConfig, createLogsSource, refusedRequests, scrape, SOURCE, telemetrygenLogsArgs, TOKEN, type Protocol, type SluiceAuth } from './otlp-clients.js';
import { foldProfiles, perRecord } from './profile-stages.js';
import { apiCall, freePort, median, procCpuSec, residentBytes, round2, sleep, startBenchServer, waitTask } from './util.js';

export interface TelemetrygenE2eOptions {
  protocols: Protocol[];
  durationSec: number;
  rounds: number;
  workers: number;
  batchSize: number;
  /** Records a second per worker; 0: unthrottled. */
  rate: number;
  /** Sluice's import floor and the sink's import interval. */
  importInterval: string;
  drainTimeoutSec: number;
  /** Profile Sluice's server (`--cpu-prof`) and report its CPU µs a record by stage. */
  profile?: boolean;
  /** Where to copy the profiles (one folder per case), to read them in a tool. */
  keepProfiles?: string;
}

type Server = 'sluice' | 'collector';

/** One reading of a server: seconds since the first send, records accepted and landed. */
interface Sample {
  t: number;
  accepted: number;
  landed: number;
}

interface CaseResult {
  records: number;
  loadSec: number;
  /** From the first send until the last accepted record landed. */
  totalSec: number;
  acceptedPerSec: number;
  landedPerSec: number;
  /** Seconds from accepted to landed at each tenth of the records. */
  landLatencySec: number[];
  cpuSecPer100k: number;
  loadGeneratorCpuSecPer100k: number;
  memoryMb: number;
  /** Sluice with --profile: CPU µs a record by stage (bench/profile-stages.ts). */
  cpuMicrosPerRecordByStage?: Record<string, number>;
  problems: string[];
}

const MB = 1024 * 1024;
const SAMPLE_MS = 500;
const SINK_SETTINGS = (importInterval: string) => [
  { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
  { key: 'storage.level.target.import.trigger.interval', value: importInterval },
];

export async function telemetrygenE2eBench(main: string, options: TelemetrygenE2eOptions): Promise<Record<string, unknown>> {
  const answer = await ensureOtelTools();
  if ('skip' in answer) {
    process.stdout.write(`e2e telemetrygen: skipped: ${answer.skip}\n`);
    return { ok: true, skipped: answer.skip };
  }
  const tools = answer.tools;
  const cases: Array<[Server, Protocol]> = options.protocols.flatMap((p) => [['sluice', p], ['collector', p]] as Array<[Server, Protocol]>);
  process.stdout.write(
    `e2e telemetrygen: ${options.rounds} round(s) of ${options.durationSec} s of logs (${options.workers} workers, ${options.batchSize} records a request, ` +
      `${options.rate > 0 ? `${options.rate} records/s a worker` : 'unthrottled'}) against ${cases.map(([s, p]) => `${s}-${p}`).join(', ')}; ` +
      `Sluice's sink uploads every 1 s and imports every ${options.importInterval}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );
  const runs: Record<string, CaseResult[]> = {};
  const problems: string[] = [];
  for (let round = 0; round < options.rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const [server, protocol] = cases[(round + k) % cases.length];
      const name = `${server}-${protocol}`;
      const r = server === 'sluice' ? await sluiceCase(tools, main, protocol, options) : await collectorCase(tools, protocol, options);
      (runs[name] ??= []).push(r);
      problems.push(...r.problems.map((p) => `round ${round + 1} ${name}: ${p}`));
      process.stdout.write(
        `round ${round + 1}/${options.rounds} ${name.padEnd(14)} ${r.records} records: ${r.landedPerSec.toFixed(0).padStart(6)} records/s landed ` +
          `(${r.acceptedPerSec.toFixed(0)} accepted over ${r.loadSec.toFixed(1)} s, all landed after ${r.totalSec.toFixed(1)} s), ` +
          `latency to land median ${median(r.landLatencySec).toFixed(2)} s, most ${Math.max(...r.landLatencySec).toFixed(2)} s; ` +
          `${r.cpuSecPer100k.toFixed(2)} CPU s/100k (telemetrygen ${r.loadGeneratorCpuSecPer100k.toFixed(2)}), ${r.memoryMb.toFixed(0)} MB\n`,
      );
      if (r.cpuMicrosPerRecordByStage) process.stdout.write(`  ${name} CPU µs a record by stage: ${JSON.stringify(r.cpuMicrosPerRecordByStage)}\n`);
      for (const p of r.problems) process.stdout.write(`  PROBLEM: ${p}\n`);
    }
  }
  const med = (name: string, pick: (r: CaseResult) => number) => round2(median(runs[name].map(pick)));
  const summary = (name: string) => ({
    landedRecordsPerSec: med(name, (r) => r.landedPerSec),
    acceptedRecordsPerSec: med(name, (r) => r.acceptedPerSec),
    landLatencyMedianSec: med(name, (r) => median(r.landLatencySec)),
    landLatencyMaxSec: med(name, (r) => Math.max(...r.landLatencySec)),
    allLandedAfterSec: med(name, (r) => r.totalSec),
    records: med(name, (r) => r.records),
    cpuSecPer100kRecords: med(name, (r) => r.cpuSecPer100k),
    loadGeneratorCpuSecPer100kRecords: med(name, (r) => r.loadGeneratorCpuSecPer100k),
    memoryMb: med(name, (r) => r.memoryMb),
    ...(runs[name][0].cpuMicrosPerRecordByStage ? { cpuMicrosPerRecordByStage: runs[name].map((r) => r.cpuMicrosPerRecordByStage) } : {}),
    perRound: runs[name].map((r) => Math.round(r.landedPerSec)),
  });
  /** Sluice over the Collector, each round's pair, median. */
  const ratio = (protocol: Protocol, pick: (r: CaseResult) => number) => {
    const s = runs[`sluice-${protocol}`];
    const c = runs[`collector-${protocol}`];
    return round2(median(s.map((r, i) => pick(r) / pick(c[i]))));
  };
  const results: Record<string, unknown> = {};
  const ratios: Record<string, unknown> = {};
  for (const protocol of options.protocols) {
    results[`sluice-${protocol}`] = summary(`sluice-${protocol}`);
    results[`collector-${protocol}`] = summary(`collector-${protocol}`);
    ratios[protocol] = {
      landedRecordsPerSec: ratio(protocol, (r) => r.landedPerSec),
      acceptedRecordsPerSec: ratio(protocol, (r) => r.acceptedPerSec),
      landLatencyMedianSec: ratio(protocol, (r) => median(r.landLatencySec)),
      cpuSecPer100kRecords: ratio(protocol, (r) => r.cpuSecPer100k),
      memoryMb: ratio(protocol, (r) => r.memoryMb),
    };
  }
  if (problems.length > 0) process.stdout.write(`PROBLEMS:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  return {
    ok: problems.length === 0,
    client: 'telemetrygen',
    protocols: options.protocols,
    rounds: options.rounds,
    durationSec: options.durationSec,
    workers: options.workers,
    batchSize: options.batchSize,
    rate: options.rate,
    importInterval: options.importInterval,
    results,
    ratiosToCollector: ratios,
    problems,
  };
}

/**
 * Runs telemetrygen for the load and reads `read()` every 500 ms until every accepted record has
 * landed after the load (or the drain timeout): the samples, the CPU and memory of `serverPid`.
 */
async function run(tools: OtelTools, args: string[], serverPid: number, options: TelemetrygenE2eOptions, read: () => Promise<{ accepted: number; landed: number }>) {
  const cpu0 = procCpuSec(serverPid);
  const t0 = performance.now();
  const generator = startTelemetrygen(tools, args, (options.durationSec + 120) * 1000);
  let generatorCpuSec = 0;
  let finished: { code: number | null; output: string } | undefined;
  void generator.done.then((f) => (finished = f));
  const samples: Sample[] = [];
  let memoryMaxBytes = 0;
  let loadSec = NaN;
  for (;;) {
    await sleep(SAMPLE_MS);
    // Its CPU while it runs (/proc forgets an exited process).
    if (!finished) generatorCpuSec = procCpuSec(generator.pid) || generatorCpuSec;
    const { accepted, landed } = await read();
    const t = (performance.now() - t0) / 1000;
    samples.push({ t, accepted, landed });
    memoryMaxBytes = Math.max(memoryMaxBytes, residentBytes(serverPid).anon);
    if (finished && Number.isNaN(loadSec)) loadSec = t;
    if (finished && landed >= accepted) break;
    if (finished && t - loadSec > options.drainTimeoutSec) break;
  }
  return { samples, loadSec, serverCpuSec: procCpuSec(serverPid) - cpu0, generatorCpuSec, memoryMaxBytes, finished: finished! };
}

/** The first time (interpolated between samples) `of` reached `level`. */
function reachedAt(samples: Sample[], of: 'accepted' | 'landed', level: number): number {
  let previous = { t: 0, v: 0 };
  for (const s of samples) {
    const v = s[of];
    if (v >= level) return v === previous.v ? s.t : previous.t + ((level - previous.v) / (v - previous.v)) * (s.t - previous.t);
    previous = { t: s.t, v };
  }
  return NaN;
}

function perCase(r: Awaited<ReturnType<typeof run>>, problems: string[]): CaseResult {
  const last = r.samples[r.samples.length - 1];
  const records = last.accepted;
  if (r.finished.code !== 0) problems.push(`telemetrygen exited ${r.finished.code}: ${r.finished.output.slice(-1500)}`);
  if (records === 0) problems.push('nothing was accepted');
  if (last.landed < records) problems.push(`${last.landed} of ${records} accepted records had landed after the drain timeout`);
  if (last.landed > records) problems.push(`${last.landed} records landed, more than the ${records} accepted`);
  const totalSec = reachedAt(r.samples, 'landed', records);
  const landLatencySec = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((tenth) => {
    const level = (records * tenth) / 10;
    return round2(reachedAt(r.samples, 'landed', level) - reachedAt(r.samples, 'accepted', level));
  });
  const per100k = (cpu: number) => (records > 0 ? (cpu / records) * 100_000 : NaN);
  return {
    records,
    loadSec: r.loadSec,
    totalSec,
    acceptedPerSec: records / r.loadSec,
    landedPerSec: records / totalSec,
    landLatencySec,
    cpuSecPer100k: per100k(r.serverCpuSec),
    loadGeneratorCpuSecPer100k: per100k(r.generatorCpuSec),
    memoryMb: r.memoryMaxBytes / MB,
    problems,
  };
}

async function sluiceCase(tools: OtelTools, main: string, protocol: Protocol, options: TelemetrygenE2eOptions): Promise<CaseResult> {
  const grpcPort = await freePort();
  const profiles = options.profile ? mkdtempSync(join(tmpdir(), 'sluice-bench-e2e-profiles-')) : undefined;
  const { server, base, close } = await startBenchServer(
    main,
    'e2e-telemetrygen',
    TOKEN,
    { SLUICE_OTLP_GRPC_PORT: String(grpcPort), SLUICE_IMPORT_MIN_INTERVAL: options.importInterval },
    profiles ? ['--cpu-prof', '--cpu-prof-dir', profiles] : [],
  );
  const problems: string[] = [];
  let result: CaseResult | undefined;
  let lifeCpuSec = 0;
  try {
    const { auth, tableId } = await createLogsSource(base, TOKEN, SOURCE);
    await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `/v1/branches/default/sources/${SOURCE}/sinks/logs/settings`, { settings: SINK_SETTINGS(options.importInterval) }));
    const endpoint = protocol === 'http' ? new URL(base).host : `127.0.0.1:${grpcPort}`;
    const [bucket, table] = [tableId.slice(0, tableId.lastIndexOf('.')), tableId.slice(tableId.lastIndexOf('.') + 1)];
    const read = async () => {
      const accepted = metricValue(await scrape(`${base}/metrics`), 'sluice_ingest_records_total', { source: SOURCE });
      const answer = (await apiCall(base, TOKEN, 'POST', '/v2/storage/sql', { query: `SELECT count(*) AS n FROM "${bucket}"."${table}"` })) as { rows: unknown[] };
      const row = answer.rows[0] as unknown[] | Record<string, unknown>;
      return { accepted, landed: Number(Array.isArray(row) ? row[0] : row.n) };
    };
    const r = await run(tools, args(endpoint, protocol, options, auth), server.pid, options, read);
    // Back-pressure (429, RESOURCE_EXHAUSTED) is part of an end-to-end run: reported, not a problem.
    const refused = refusedRequests(await scrape(`${base}/metrics`));
    if (refused > 0) process.stdout.write(`  sluice-${protocol}: ${refused} requests refused (back-pressure, retried by telemetrygen's exporter)\n`);
    if (server.exited) problems.push(`the server exited during the run: ${server.lastOutput()}`);
    lifeCpuSec = procCpuSec(server.pid);
    result = perCase(r, problems);
    return result;
  } catch (err) {
    // A server that stopped answering may be exiting: give it a moment to say why.
    await sleep(1000);
    throw new Error(`sluice-${protocol}: ${(err as Error).message}${server.exited ? `; the server exited: ${server.describeExit()}` : ''}`, { cause: err });
  } finally {
    await close();
    if (profiles) {
      if (result) result.cpuMicrosPerRecordByStage = stagesOf(profiles, lifeCpuSec, result.records);
      if (options.keepProfiles) cpSync(profiles, join(options.keepProfiles, `sluice-${protocol}`), { recursive: true });
      rmSync(profiles, { recursive: true, force: true });
    }
  }
}

/**
 * The server's CPU µs a record by stage, from the profiles its threads wrote on exit; what the
 * process used beyond them is the threads without JavaScript (libuv's pool, DuckDB's, GC helpers).
 */
function stagesOf(dir: string, lifeCpuSec: number, records: number): Record<string, number> {
  const { totals } = foldProfiles(dir);
  const profiled = [...totals.values()].reduce((a, b) => a + b, 0);
  return {
    ...perRecord(totals, records),
    'process CPU beyond the profiles (threads without JavaScript)': round2((lifeCpuSec * 1e6 - profiled) / records),
    'server life CPU': round2((lifeCpuSec * 1e6) / records),
  };
}

async function collectorCase(tools: OtelTools, protocol: Protocol, options: TelemetrygenE2eOptions): Promise<CaseResult> {
  const receiver = `127.0.0.1:${await freePort()}`;
  const metricsPort = await freePort();
  const out = mkdtempSync(join(tmpdir(), 'sluice-bench-e2e-otelcol-'));
  const collector = await CollectorProcess.start(tools, [collectorConfig(protocol, receiver, metricsPort, out)]);
  try {
    const read = async () => {
      const metrics = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      return { accepted: metricValue(metrics, 'otelcol_receiver_accepted_log_records'), landed: metricValue(metrics, 'otelcol_exporter_sent_log_records') };
    };
    const r = await run(tools, args(receiver, protocol, options), collector.pid, options, read);
    const problems: string[] = [];
    const refused = metricValue(await scrape(`http://127.0.0.1:${metricsPort}/metrics`), 'otelcol_receiver_refused_log_records');
    if (refused > 0) problems.push(`the receiver refused ${refused} records`);
    return perCase(r, problems);
  } finally {
    await collector.stop();
    rmSync(out, { recursive: true, force: true });
  }
}

function args(endpoint: string, protocol: Protocol, options: TelemetrygenE2eOptions, auth?: SluiceAuth): string[] {
  return telemetrygenLogsArgs(endpoint, protocol, { seconds: options.durationSec, workers: options.workers, batchSize: options.batchSize, rate: options.rate }, auth);
}
