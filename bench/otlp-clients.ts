/**
 * The OTLP bench's second part: telemetrygen (the Collector project's load generator, a client
 * nobody here wrote) sends logs to Sluice over OTLP/HTTP and over OTLP/gRPC, and, in the same
 * run, to the OpenTelemetry Collector itself (otlp receiver -> batch processor -> file exporter,
 * JSON lines, rotated) over the same protocols: the peer baseline.
 *
 * Every case gets a fresh server process. telemetrygen runs unthrottled (`--rate 0`) for
 * warm-up + duration seconds with `--workers` workers and `--batch-size` records a request; the
 * measured window is the duration after the warm-up, read from each server's own counters:
 *
 *  - Sluice: `sluice_ingest_records_total` of the source (records in the event log, acknowledged)
 *    over the window; then, after the load, the wait until the default logs sink has mapped every
 *    record, for the end-to-end rate: all records / (load + drain) seconds;
 *  - the Collector: `otelcol_receiver_accepted_log_records` over the window, and
 *    `otelcol_exporter_sent_log_records` (written to the file) for its end to end.
 *
 * CPU seconds per 100k records: the server process's (all its threads, /proc) over the window
 * divided by the records accepted in it; telemetrygen's own CPU is reported beside (on two cores
 * the load generator's share bounds what a fast server can show). Memory: the server's resident
 * anonymous memory (RssAnon), the most sampled during the window. Figures are medians over the
 * rounds (the order of the cases rotates every round); ratios are Sluice over the Collector on the
 * same protocol.
 */
import { createConnection } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CollectorProcess, ensureOtelTools, startTelemetrygen, type OtelTools } from '../test/helpers/otel-tools.js';
import { metricValue } from '../test/helpers/prometheus.js';
import { apiCall, freePort, median, procCpuSec, residentBytes, round2, sleep, startBenchServer, waitTask } from './util.js';

export interface ClientsOptions {
  durationSec: number;
  warmupSec: number;
  rounds: number;
  workers: number;
  batchSize: number;
  drainTimeoutSec: number;
}

export type Protocol = 'http' | 'grpc';
type Server = 'sluice' | 'collector';

interface CaseResult {
  acceptedPerSec: number;
  /** Sluice: rows mapped by the sink; the Collector: records written by its file exporter. */
  endToEndPerSec: number;
  drainSec: number;
  cpuSecPer100k: number;
  loadGeneratorCpuSecPer100k: number;
  memoryMb: number;
  problems: string[];
}

/** The master token and the OTLP source of both telemetrygen benches (this one and e2e's). */
export const TOKEN = 'bench';
export const SOURCE = 'bench';
const MB = 1024 * 1024;
/** Seconds telemetrygen goes on after the measured window. */
const TAIL_SEC = 3;

export async function otlpClientsBench(options: ClientsOptions): Promise<Record<string, unknown>> {
  const answer = await ensureOtelTools();
  if ('skip' in answer) {
    process.stdout.write(`otlp clients: skipped: ${answer.skip}\n`);
    return { skipped: answer.skip };
  }
  const tools = answer.tools;
  const main = resolve('dist/main.js');
  if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');
  const grpc = await sluiceHasGrpc(main);
  if (!grpc) process.stdout.write('otlp clients: this build of Sluice has no OTLP/gRPC listener: the gRPC cases are left out\n');
  const cases: Array<[Server, Protocol]> = [['collector', 'http'], ['sluice', 'http'], ...(grpc ? ([['collector', 'grpc'], ['sluice', 'grpc']] as Array<[Server, Protocol]>) : [])];
  process.stdout.write(
    `otlp clients: ${options.rounds} round(s) of telemetrygen logs (${options.workers} workers, ${options.batchSize} records a request, unthrottled) ` +
      `against ${cases.map(([s, p]) => `${s}-${p}`).join(', ')}; warm-up ${options.warmupSec} s, ${options.durationSec} s measured; ` +
      `load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
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
        `round ${round + 1}/${options.rounds} ${name.padEnd(14)} ${r.acceptedPerSec.toFixed(0).padStart(7)} records/s accepted, ` +
          `${r.endToEndPerSec.toFixed(0).padStart(7)} end to end (drain ${r.drainSec.toFixed(1)} s), ` +
          `${r.cpuSecPer100k.toFixed(2)} CPU s/100k (telemetrygen ${r.loadGeneratorCpuSecPer100k.toFixed(2)}), ${r.memoryMb.toFixed(0)} MB\n`,
      );
    }
  }

  const med = (name: string, key: keyof CaseResult) => round2(median(runs[name].map((r) => Number(r[key]))));
  const summary = (name: string) => ({
    acceptedRecordsPerSec: med(name, 'acceptedPerSec'),
    endToEndRecordsPerSec: med(name, 'endToEndPerSec'),
    drainSec: med(name, 'drainSec'),
    cpuSecPer100kRecords: med(name, 'cpuSecPer100k'),
    loadGeneratorCpuSecPer100kRecords: med(name, 'loadGeneratorCpuSecPer100k'),
    memoryMb: med(name, 'memoryMb'),
    perRound: runs[name].map((r) => Math.round(r.acceptedPerSec)),
  });
  /** Sluice over the Collector, each round's pair, median. */
  const ratio = (protocol: Protocol, key: keyof CaseResult) => {
    const s = runs[`sluice-${protocol}`];
    const c = runs[`collector-${protocol}`];
    return round2(median(s.map((r, i) => Number(r[key]) / Number(c[i][key]))));
  };
  const results: Record<string, unknown> = {};
  const ratios: Record<string, unknown> = {};
  for (const protocol of grpc ? (['http', 'grpc'] as Protocol[]) : (['http'] as Protocol[])) {
    results[`sluice-${protocol}`] = summary(`sluice-${protocol}`);
    results[`collector-${protocol}`] = summary(`collector-${protocol}`);
    ratios[protocol] = {
      acceptedRecordsPerSec: ratio(protocol, 'acceptedPerSec'),
      endToEndRecordsPerSec: ratio(protocol, 'endToEndPerSec'),
      cpuSecPer100kRecords: ratio(protocol, 'cpuSecPer100k'),
      memoryMb: ratio(protocol, 'memoryMb'),
    };
  }
  if (problems.length > 0) process.stdout.write(`PROBLEMS:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  return {
    ok: problems.length === 0,
    grpc,
    rounds: options.rounds,
    durationSec: options.durationSec,
    warmupSec: options.warmupSec,
    workers: options.workers,
    batchSize: options.batchSize,
    results,
    ratiosToCollector: ratios,
    problems,
  };
}

/** telemetrygen's arguments for logs at `endpoint`, for warm-up + duration seconds (and a tail). */
function telemetrygenArgs(endpoint: string, protocol: Protocol, options: ClientsOptions, auth?: SluiceAuth): string[] {
  // It runs on past the window, so that the whole window is under load.
  return telemetrygenLogsArgs(endpoint, protocol, { seconds: options.warmupSec + options.durationSec + TAIL_SEC, workers: options.workers, batchSize: options.batchSize }, auth);
}

/** An OTLP source's secret, and the path its OTLP/HTTP URLs start with. */
export interface SluiceAuth {
  secret: string;
  pathPrefix: string;
}

/**
 * telemetrygen's arguments for `seconds` of logs at `endpoint` (host:port) over `protocol`, from
 * `workers` workers, `batchSize` records a request, `rate` records a second per worker (0:
 * unthrottled); with Sluice's `auth` (the secret as `authorization: Bearer`, the source's path).
 */
export function telemetrygenLogsArgs(endpoint: string, protocol: Protocol, load: { seconds: number; workers: number; batchSize: number; rate?: number }, auth?: SluiceAuth): string[] {
  return [
    'logs',
    '--otlp-endpoint', endpoint,
    '--otlp-insecure',
    '--duration', `${load.seconds}s`,
    '--workers', String(load.workers),
    '--batch-size', String(load.batchSize),
    '--rate', String(load.rate ?? 0),
    '--service', 'bench',
    '--body', 'GET /api/orders/100042 completed in 17 ms for user u-42',
    '--telemetry-attributes', 'http.route="/api/orders/:id"',
    '--telemetry-attributes', 'http.response.status_code=200',
    // A refusal (back-pressure, a full log) is retried by the exporter; the run goes on regardless.
    '--allow-export-failures',
    ...(protocol === 'http' ? ['--otlp-http', '--otlp-http-url-path', `${auth?.pathPrefix ?? ''}/v1/logs`] : []),
    ...(auth ? ['--otlp-header', `authorization="Bearer ${auth.secret}"`] : []),
  ];
}

interface Window {
  records: number;
  seconds: number;
  serverCpuSec: number;
  generatorCpuSec: number;
  memoryMaxBytes: number;
}

/**
 * Runs telemetrygen and measures the window after the warm-up: `count()` (the server's accepted
 * records), the server's and telemetrygen's CPU, the server's memory (sampled every 250 ms).
 */
async function measure(tools: OtelTools, args: string[], serverPid: number, options: ClientsOptions, count: () => Promise<number>): Promise<Window & { output: string; code: number | null }> {
  const generator = startTelemetrygen(tools, args, (options.warmupSec + options.durationSec + TAIL_SEC + 120) * 1000);
  await sleep(options.warmupSec * 1000);
  const start = { at: performance.now(), records: await count(), cpu: procCpuSec(serverPid), gen: procCpuSec(generator.pid) };
  let memoryMaxBytes = 0;
  const windowEnds = start.at + options.durationSec * 1000;
  while (performance.now() < windowEnds) {
    memoryMaxBytes = Math.max(memoryMaxBytes, residentBytes(serverPid).anon);
    await sleep(Math.min(250, Math.max(0, windowEnds - performance.now())));
  }
  const end = { at: performance.now(), records: await count(), cpu: procCpuSec(serverPid), gen: procCpuSec(generator.pid) };
  const finished = await generator.done;
  if (end.gen === 0) throw new Error(`telemetrygen ended before the measured window did: ${finished.output.slice(-1500)}`);
  return {
    records: end.records - start.records,
    seconds: (end.at - start.at) / 1000,
    serverCpuSec: end.cpu - start.cpu,
    generatorCpuSec: end.gen - start.gen,
    memoryMaxBytes,
    output: finished.output,
    code: finished.code,
  };
}

function perCase(w: Window, endToEndPerSec: number, drainSec: number, problems: string[]): CaseResult {
  const per100k = (cpu: number) => (w.records > 0 ? (cpu / w.records) * 100_000 : NaN);
  return {
    acceptedPerSec: w.records / w.seconds,
    endToEndPerSec,
    drainSec,
    cpuSecPer100k: per100k(w.serverCpuSec),
    loadGeneratorCpuSecPer100k: per100k(w.generatorCpuSec),
    memoryMb: w.memoryMaxBytes / MB,
    problems,
  };
}

// ---------------------------------------------------------------------------------------------
// Sluice.

async function sluiceCase(tools: OtelTools, main: string, protocol: Protocol, options: ClientsOptions): Promise<CaseResult> {
  const grpcPort = await freePort();
  // Ingestion is measured: no back-pressure from the sinks (the e2e bench has it).
  const { server, base, close } = await startBenchServer(main, 'otlp-clients', TOKEN, { SLUICE_OTLP_GRPC_PORT: String(grpcPort), SLUICE_MAX_SINK_BACKLOG: '0' });
  const problems: string[] = [];
  try {
    const sources = '/v1/branches/default/sources';
    const { auth } = await createLogsSource(base, TOKEN, SOURCE);
    const endpoint = protocol === 'http' ? new URL(base).host : `127.0.0.1:${grpcPort}`;

    const metrics = () => scrape(`${base}/metrics`);
    const accepted = async () => metricValue(await metrics(), 'sluice_ingest_records_total', { source: SOURCE });
    const loadStarted = performance.now();
    const w = await measure(tools, telemetrygenArgs(endpoint, protocol, options, auth), server.pid, options, accepted);
    const loadSec = (performance.now() - loadStarted) / 1000;
    if (w.code !== 0) problems.push(`telemetrygen exited ${w.code}: ${w.output.slice(-1500)}`);
    // Answered requests by status: `2xx` over HTTP, the gRPC code's name (`OK`) over gRPC.
    const refused = refusedRequests(await metrics());
    if (refused > 0) problems.push(`${refused} requests were refused or failed`);

    // End to end: every record accepted during the whole run (warm-up included) mapped by the sink.
    const total = await accepted();
    const mapped = async () => ((await apiCall(base, TOKEN, 'GET', `${sources}/${SOURCE}/sinks/logs/statistics/total`)) as { total?: { recordsCount?: number } }).total?.recordsCount ?? 0;
    const drainStarted = performance.now();
    let done = await mapped();
    while (done < total && performance.now() - drainStarted < options.drainTimeoutSec * 1000) {
      await sleep(250);
      done = await mapped();
    }
    const drainSec = (performance.now() - drainStarted) / 1000;
    if (done < total) problems.push(`the sink had mapped ${done} of ${total} records after ${Math.round(drainSec)} s`);
    if (server.exited) problems.push(`the server exited during the run: ${server.lastOutput()}`);
    return perCase(w, total / (loadSec + drainSec), drainSec, problems);
  } catch (err) {
    throw new Error(`sluice-${protocol}: ${(err as Error).message}${server.exited ? `; the server exited: ${server.lastOutput()}` : ''}`, { cause: err });
  } finally {
    await close();
  }
}

/** Requests a Sluice node answered with anything but success: `2xx` over HTTP, `OK` (the gRPC code's name) over gRPC. */
export function refusedRequests(metricsText: string): number {
  const answered = (status?: string) => metricValue(metricsText, 'sluice_ingest_requests_total', status ? { status } : {});
  return answered() - answered('2xx') - answered('OK');
}

/**
 * Creates the OTLP source `sourceId` with its default logs sink (POST .../otlp/default-sinks,
 * sink `logs`); its authentication for telemetrygen and the sink's table.
 */
export async function createLogsSource(base: string, token: string, sourceId: string): Promise<{ auth: SluiceAuth; tableId: string }> {
  const sources = '/v1/branches/default/sources';
  await waitTask(base, token, await apiCall(base, token, 'POST', sources, { sourceId, name: sourceId, type: 'otlp' }));
  const sinks = (await apiCall(base, token, 'POST', `${sources}/${sourceId}/otlp/default-sinks`, { signals: ['logs'] })) as { sinks: Array<{ task: unknown; tableId: string }> };
  for (const sink of sinks.sinks) await waitTask(base, token, sink.task);
  const source = (await apiCall(base, token, 'GET', `${sources}/${sourceId}`)) as { otlp: { baseUrl: string; secret: string } };
  return { auth: { secret: source.otlp.secret, pathPrefix: new URL(source.otlp.baseUrl).pathname }, tableId: sinks.sinks[0].tableId };
}

/** Whether this build of Sluice listens for OTLP/gRPC on SLUICE_OTLP_GRPC_PORT. */
async function sluiceHasGrpc(main: string): Promise<boolean> {
  const grpcPort = await freePort();
  const { close } = await startBenchServer(main, 'otlp-grpc-probe', TOKEN, { SLUICE_OTLP_GRPC_PORT: String(grpcPort) });
  const connects = () =>
    new Promise<boolean>((res) => {
      const socket = createConnection({ host: '127.0.0.1', port: grpcPort });
      socket.once('connect', () => {
        socket.destroy();
        res(true);
      });
      socket.once('error', () => res(false));
    });
  try {
    // The health check may answer a moment before the gRPC listener is bound.
    const deadline = performance.now() + 5000;
    for (;;) {
      if (await connects()) return true;
      if (performance.now() > deadline) return false;
      await sleep(100);
    }
  } finally {
    await close();
  }
}

// ---------------------------------------------------------------------------------------------
// The Collector: otlp receiver -> batch -> file.

async function collectorCase(tools: OtelTools, protocol: Protocol, options: ClientsOptions): Promise<CaseResult> {
  const receiver = `127.0.0.1:${await freePort()}`;
  const metricsPort = await freePort();
  const out = mkdtempSync(join(tmpdir(), 'sluice-bench-otelcol-out-'));
  const collector = await CollectorProcess.start(tools, [collectorConfig(protocol, receiver, metricsPort, out)]);
  const problems: string[] = [];
  try {
    const metrics = () => scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    const accepted = async () => metricValue(await metrics(), 'otelcol_receiver_accepted_log_records');
    const loadStarted = performance.now();
    const w = await measure(tools, telemetrygenArgs(receiver, protocol, options), collector.pid, options, accepted);
    if (w.code !== 0) problems.push(`telemetrygen exited ${w.code}: ${w.output.slice(-1500)}`);
    // End to end: the file exporter has written what the receiver accepted (the batch processor
    // flushes within its timeout, 200 ms by default).
    const drainStarted = performance.now();
    const total = await accepted();
    let written = metricValue(await metrics(), 'otelcol_exporter_sent_log_records');
    while (written < total && performance.now() - drainStarted < options.drainTimeoutSec * 1000) {
      await sleep(100);
      written = metricValue(await metrics(), 'otelcol_exporter_sent_log_records');
    }
    const drainSec = (performance.now() - drainStarted) / 1000;
    if (written < total) problems.push(`the file exporter had written ${written} of ${total} records after ${Math.round(drainSec)} s`);
    const refused = metricValue(await metrics(), 'otelcol_receiver_refused_log_records');
    if (refused > 0) problems.push(`the receiver refused ${refused} records`);
    if (total === 0) problems.push(`the Collector accepted nothing: ${collector.logs().slice(-1500)}`);
    const loadSec = (drainStarted - loadStarted) / 1000;
    return perCase(w, total / (loadSec + drainSec), drainSec, problems);
  } finally {
    await collector.stop();
    rmSync(out, { recursive: true, force: true });
  }
}

/**
 * The peer baseline's configuration: the Collector's otlp receiver on `receiver` (host:port) for
 * `protocol`, the batch processor (its defaults), the file exporter writing JSON lines into
 * `outDir` (rotated, so that a long run does not fill the disk: a deployment would rotate too);
 * its own metrics for Prometheus on `metricsPort` (otelcol_receiver_accepted_log_records,
 * otelcol_exporter_sent_log_records).
 */
export function collectorConfig(protocol: Protocol, receiver: string, metricsPort: number, outDir: string): object {
  return {
    receivers: { otlp: { protocols: { [protocol]: { endpoint: receiver } } } },
    processors: { batch: {} },
    exporters: { file: { path: join(outDir, 'logs.jsonl'), rotation: { max_megabytes: 100, max_backups: 1 } } },
    service: {
      telemetry: { metrics: { readers: [{ pull: { exporter: { prometheus: { host: '127.0.0.1', port: metricsPort } } } }] } },
      pipelines: { logs: { receivers: ['otlp'], processors: ['batch'], exporters: ['file'] } },
    },
  };
}

export async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}
