import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { otlpTypes } from '../src/sources/otlp/schema.js';
import { decodeExportRequest } from '../src/sources/otlp/decode.js';
import { flattenLogs } from '../src/sources/otlp/flatten.js';
import type { ExportLogsRequest } from '../src/sources/otlp/model.js';
import { apiCall, freePort, median, round2, ServerProcess, sleep, waitTask, serveNodeFlags } from './util.js';

/**
 * OTLP log ingestion against plain HTTP ingestion of the same records, in the same run:
 *
 *  - otlp: POST /otlp/.../v1/logs, protobuf ExportLogsServiceRequest of 512 log records
 *    (decode, flatten, check against the sink, one log append per request);
 *  - http: POST /stream/... with one of the same records' flattened JSON per request
 *    (autocannon cycles through all 512).
 *
 * Both sources have one sink with the same five path columns and the default sync.wait (the
 * answer waits for the durable log write). Each case gets a fresh `node dist/main.js serve`
 * (own data directory); rounds rotate the order, figures are medians. Every answer is checked
 * (status 200; OTLP: an empty body, i.e. no partial_success). After the load, the bench waits
 * until the sink has every acknowledged record (ingestion may outrun the sink writer; the log
 * holds the difference) and reports the end-to-end rate, records / (load + drain) seconds.
 *
 * `npm run bench -- otlp [--duration 5] [--warmup 1] [--rounds 3] [--connections 50] [--otlp-connections 8] [--batch 512]`
 */
export async function otlpBench(args: string[]): Promise<Record<string, unknown>> {
  const opt = (name: string, dflt: number): number => {
    const i = args.indexOf(name);
    const v = i >= 0 ? Number(args[i + 1]) : NaN;
    return Number.isFinite(v) && v > 0 ? v : dflt;
  };
  const duration = opt('--duration', 5);
  const warmup = opt('--warmup', 1);
  const rounds = opt('--rounds', 3);
  const httpConnections = opt('--connections', 50);
  const otlpConnections = opt('--otlp-connections', 8);
  const batch = opt('--batch', 512);
  const main = resolve('dist/main.js');
  if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');

  const protobuf = logsRequest(batch);
  const records = flattenLogs(decodeExportRequest('logs', 'protobuf', protobuf) as ExportLogsRequest);
  const meanRecord = Math.round(records.reduce((n, r) => n + r.length, 0) / records.length);
  process.stdout.write(
    `otlp: ${rounds} round(s) of otlp (${otlpConnections} connections, ${batch} log records = ${protobuf.length} bytes of protobuf per request) ` +
      `and http (${httpConnections} connections, one flattened record of ~${meanRecord} bytes per request); ` +
      `warm-up ${warmup} s, ${duration} s measured; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );

  const cases: Case[] = [
    { name: 'otlp', connections: otlpConnections, recordsPerRequest: batch, requests: [{ body: protobuf, contentType: 'application/x-protobuf' }] },
    { name: 'http', connections: httpConnections, recordsPerRequest: 1, requests: records.map((r) => ({ body: Buffer.from(r), contentType: 'application/json' })) },
  ];
  const runs: Record<string, RunResult[]> = { otlp: [], http: [] };
  const problems: string[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(round + k) % cases.length];
      const r = await runCase(c, main, warmup, duration);
      runs[c.name].push(r);
      problems.push(...r.problems.map((p) => `round ${round + 1} ${c.name}: ${p}`));
      process.stdout.write(
        `round ${round + 1}/${rounds} ${c.name.padEnd(4)} ${r.recordsPerSec.toFixed(0).padStart(7)} records/s (${r.requestsPerSec.toFixed(0)} requests/s), ` +
          `p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms; status ${JSON.stringify(r.statusCodes)}; in the sink when the load stopped: ${r.sinkRecords} of ${r.acknowledged}, ` +
          `all after ${r.drainSec.toFixed(1)} s more (end to end ${r.endToEndRecordsPerSec.toFixed(0)} records/s)\n`,
      );
    }
  }
  const med = (name: string, key: keyof RunResult) => round2(median(runs[name].map((r) => Number(r[key]))));
  const ok = problems.length === 0;
  if (!ok) process.stdout.write(`PROBLEMS:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  return {
    ok,
    rounds,
    durationSec: duration,
    batch,
    otlpConnections,
    httpConnections,
    protobufBytesPerRequest: protobuf.length,
    flattenedRecordBytes: meanRecord,
    otlpRecordsPerSec: med('otlp', 'recordsPerSec'),
    httpRecordsPerSec: med('http', 'recordsPerSec'),
    ratio: round2(median(runs.otlp.map((r, i) => r.recordsPerSec / runs.http[i].recordsPerSec))),
    otlpEndToEndRecordsPerSec: med('otlp', 'endToEndRecordsPerSec'),
    httpEndToEndRecordsPerSec: med('http', 'endToEndRecordsPerSec'),
    otlpDrainSec: med('otlp', 'drainSec'),
    otlpRequestsPerSec: med('otlp', 'requestsPerSec'),
    otlpP50Ms: med('otlp', 'p50Ms'),
    otlpP99Ms: med('otlp', 'p99Ms'),
    httpP50Ms: med('http', 'p50Ms'),
    httpP99Ms: med('http', 'p99Ms'),
    perRound: { otlp: runs.otlp.map((r) => Math.round(r.recordsPerSec)), http: runs.http.map((r) => Math.round(r.recordsPerSec)) },
    problems,
  };
}

interface Case {
  name: 'otlp' | 'http';
  connections: number;
  recordsPerRequest: number;
  requests: Array<{ body: Buffer; contentType: string }>;
}

interface RunResult {
  recordsPerSec: number;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  statusCodes: Record<string, number>;
  acknowledged: number;
  /** Records in the sink right when the load stopped. */
  sinkRecords: number;
  /** Seconds from the end of the load until the sink had every acknowledged record. */
  drainSec: number;
  /** Measured records over (load duration + drain): what the whole path sustained. */
  endToEndRecordsPerSec: number;
  problems: string[];
}

const drainTimeoutMs = 180_000;

async function sinkCount(base: string, kind: string): Promise<number> {
  const stats = (await apiCall(base, TOKEN, 'GET', `/v1/branches/default/sources/${kind}/sinks/bench/statistics/total`)) as { total?: { recordsCount?: number } };
  return stats.total?.recordsCount ?? 0;
}

const TOKEN = 'bench';
const COLUMNS = [
  { type: 'path', name: 'timestamp', path: 'timestamp', rawString: true },
  { type: 'path', name: 'severity', path: 'severity_text', rawString: true },
  { type: 'path', name: 'body', path: 'body', rawString: true },
  { type: 'path', name: 'trace_id', path: 'trace_id', defaultValue: '', rawString: true },
  { type: 'path', name: 'attributes', path: 'attributes' },
];

/** One realistic ExportLogsServiceRequest (also the e2e bench's): a service's resource, one scope, `n` log records. */
export function logsRequest(n: number): Buffer {
  const type = otlpTypes().logsRequest;
  const str = (key: string, v: string) => ({ key, value: { stringValue: v } });
  const now = BigInt(Date.now()) * 1_000_000n;
  const logRecords = Array.from({ length: n }, (_, i) => ({
    timeUnixNano: String(now + BigInt(i) * 1000n),
    observedTimeUnixNano: String(now + BigInt(i) * 1000n + 500n),
    severityNumber: i % 10 === 0 ? 17 : 9,
    severityText: i % 10 === 0 ? 'ERROR' : 'INFO',
    body: { stringValue: `GET /api/orders/${100_000 + i} completed in ${(i * 7) % 250} ms for user u-${i % 97}` },
    attributes: [str('http.method', 'GET'), str('http.route', '/api/orders/:id'), { key: 'http.status_code', value: { intValue: i % 10 === 0 ? 500 : 200 } }],
    traceId: Buffer.from(`${(i + 1).toString(16).padStart(8, '0')}5b8efff798038103d269b633`, 'hex'),
    spanId: Buffer.from(`${(i + 1).toString(16).padStart(8, '0')}eee19b7e`, 'hex'),
    flags: 1,
  }));
  const request = {
    resourceLogs: [{
      resource: { attributes: [str('service.name', 'orders'), str('service.version', '1.4.2'), str('deployment.environment', 'production'), str('host.name', 'orders-7d9f')] },
      scopeLogs: [{ scope: { name: '@acme/http-logger', version: '3.1.0' }, logRecords }],
    }],
  };
  return Buffer.from(type.encode(type.fromObject(request)).finish());
}

async function runCase(c: Case, main: string, warmup: number, duration: number): Promise<RunResult> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-otlp-'));
  const server = new ServerProcess([...serveNodeFlags(), main, 'serve'], {
    SLUICE_PORT: String(port),
    SLUICE_OTLP_GRPC_PORT: '0',
    SLUICE_HOST: '127.0.0.1',
    SLUICE_DATA_DIR: dir,
    SLUICE_MASTER_TOKEN: TOKEN,
    SLUICE_LOG_LEVEL: 'warn',
    // This bench measures ingestion: no back-pressure from the sinks (429s); the e2e bench has it.
    SLUICE_MAX_SINK_BACKLOG: '0',
  });
  const problems: string[] = [];
  try {
    await server.ready(base);
    const path = await setUp(base, c.name);
    const url = base + path;
    const probe = await fetch(url, { method: 'POST', headers: { 'content-type': c.requests[0].contentType }, body: c.requests[0].body });
    const probeBody = Buffer.from(await probe.arrayBuffer());
    if (probe.status !== 200) throw new Error(`probe answered ${probe.status}: ${probeBody.toString().slice(0, 300)}`);
    if (c.name === 'otlp' && probeBody.length !== 0) throw new Error(`probe answered a partial success: ${probeBody.toString('latin1').slice(0, 300)}`);

    const warm = await load(url, c, warmup);
    const res = await load(url, c, duration);
    const statusCodes = statusCodesOf(res);
    const good = statusCodes['200'] ?? 0;
    if (res.non2xx + res.errors + res.mismatches > 0 || good !== res.requests.total) {
      problems.push(`status ${JSON.stringify(statusCodes)}, non-2xx ${res.non2xx}, errors ${res.errors} (timeouts ${res.timeouts}), body mismatches ${res.mismatches}`);
    }
    const acknowledged = (1 + (statusCodesOf(warm)['200'] ?? 0) + good) * c.recordsPerRequest;
    const sinkRecords = await sinkCount(base, c.name);
    // Then wait until the sink has mapped every acknowledged record: ingestion may outrun the
    // sink writer (the log holds the difference); end to end is (all records) / (load + drain).
    const drainStarted = performance.now();
    let drained = sinkRecords;
    while (drained < acknowledged && performance.now() - drainStarted < drainTimeoutMs) {
      await sleep(250);
      drained = await sinkCount(base, c.name);
    }
    const drainSec = (performance.now() - drainStarted) / 1000;
    if (drained < acknowledged) problems.push(`the sink had ${drained} of ${acknowledged} acknowledged records after waiting ${Math.round(drainSec)} s`);
    // Requests in flight when the warm-up and the measured load stopped may have been written
    // without their answer being counted: up to one per connection, twice.
    const inFlight = 2 * c.connections * c.recordsPerRequest;
    if (drained > acknowledged + inFlight) problems.push(`the sink has ${drained} records, more than the ${acknowledged} acknowledged and ${inFlight} in flight`);
    if (server.exited) problems.push(`the server exited during the run: ${server.lastOutput()}`);
    return {
      recordsPerSec: (good * c.recordsPerRequest) / res.duration,
      requestsPerSec: good / res.duration,
      p50Ms: res.latency.p50,
      p99Ms: res.latency.p99,
      statusCodes,
      acknowledged,
      sinkRecords,
      drainSec,
      endToEndRecordsPerSec: (good * c.recordsPerRequest) / (res.duration + drainSec),
      problems,
    };
  } catch (err) {
    throw new Error(`${c.name}: ${(err as Error).message}${server.exited ? `; the server exited: ${server.lastOutput()}` : ''}`, { cause: err });
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates source `<kind>` (type otlp or http) with sink `bench`; returns the ingestion path. */
async function setUp(base: string, kind: 'otlp' | 'http'): Promise<string> {
  const sources = '/v1/branches/default/sources';
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', sources, { sourceId: kind, name: kind, type: kind }));
  const sink = { sinkId: 'bench', name: 'bench', type: 'table', table: { type: 'keboola', tableId: `in.c-bench.${kind}`, mapping: { columns: COLUMNS } } };
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', `${sources}/${kind}/sinks`, sink));
  const source = (await apiCall(base, TOKEN, 'GET', `${sources}/${kind}`)) as { http?: { url: string }; otlp?: { url: string } };
  return kind === 'otlp' ? `${new URL(source.otlp!.url).pathname}/v1/logs` : new URL(source.http!.url).pathname;
}

function load(url: string, c: Case, duration: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        connections: c.connections,
        pipelining: 1,
        duration,
        requests: c.requests.map((r) => ({ method: 'POST', headers: { 'content-type': r.contentType }, body: r.body })),
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

function statusCodesOf(res: autocannon.Result): Record<string, number> {
  const stats = (res as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  return Object.fromEntries(Object.entries(stats).map(([code, s]) => [code, s.count]));
}
