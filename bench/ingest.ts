import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { apiCall, freePort, median, round2, ServerProcess, waitTask } from './util.js';

/**
 * Ingestion throughput and latency of single-event requests: autocannon (in this process, the
 * same settings for every case) against `node dist/main.js serve` in its own child process, for
 *
 *  - syncFalse:  one sink, five `path` columns, storage.level.local.encoding.sync.wait=false (202)
 *  - syncTrue:   the same sink with sync.wait=true (200 after the durable log write)
 *  - template:   one sink with a jsonnet `template` column and two `path` columns, sync.wait=false
 *
 * beside the baseline `bare`: a fastify app in a child process whose `POST /` parses the JSON body
 * and answers `OK`. Every case gets a fresh server (and data directory), so that the backlog one
 * case leaves in the pipeline does not load the next. Each round runs the four cases in a rotated
 * order (machine noise hits all alike); figures are medians over rounds, ratios are medians of
 * the per-round ratios against the bare endpoint of the same round. Every answer is checked:
 * status (200 / 202 as the case expects), body `OK`, connection errors and timeouts; a run with
 * any of them says so (`ok: false`, `problems`).
 *
 * Beside each case: CPU of the server process (all threads), of this process (the load
 * generator) and of the rest of the machine (busy time of /proc/stat minus both: other processes,
 * but also kernel threads flushing the server's writes), each in % of one core; latencies are
 * recorded per answer with sub-millisecond precision; and how many records had reached the sink's
 * local slice when the load stopped (mapping runs behind ingestion, e.g. with templates).
 *
 * `npm run bench -- ingest [--duration 10] [--warmup 2] [--connections 50] [--rounds 3]`
 */
export async function ingestBench(args: string[]): Promise<Record<string, unknown>> {
  const opt = (name: string, dflt: number): number => {
    const i = args.indexOf(name);
    const v = i >= 0 ? Number(args[i + 1]) : NaN;
    return Number.isFinite(v) && v > 0 ? v : dflt;
  };
  const settings: LoadSettings = {
    duration: opt('--duration', 10),
    warmup: opt('--warmup', 2),
    connections: opt('--connections', 50),
    pipelining: 1,
  };
  const rounds = opt('--rounds', 3);
  const main = resolve('dist/main.js');
  if (!existsSync(main)) throw new Error('dist/main.js is missing: run "npm run build" first.');

  const cases: Case[] = [
    { name: 'bare', expectStatus: 200 },
    { name: 'syncFalse', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS },
    { name: 'syncTrue', expectStatus: 200, syncWait: true, columns: PATH_COLUMNS },
    { name: 'template', expectStatus: 202, syncWait: false, columns: TEMPLATE_COLUMNS },
  ];
  process.stdout.write(
    `ingest: ${rounds} round(s) of ${cases.map((c) => c.name).join(', ')}; autocannon ${settings.connections} connections, ` +
      `pipelining ${settings.pipelining}, warm-up ${settings.warmup} s, ${settings.duration} s measured; ` +
      `event ${BODY.length} bytes; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );

  const runs: Record<string, RunResult[]> = Object.fromEntries(cases.map((c) => [c.name, []]));
  const problems: string[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(round + k) % cases.length];
      const r = await runCase(c, main, settings);
      runs[c.name].push(r);
      problems.push(...r.problems.map((p) => `round ${round + 1} ${c.name}: ${p}`));
      process.stdout.write(
        `round ${round + 1}/${rounds} ${c.name.padEnd(9)} ${fmt(r.eventsPerSec, 0).padStart(6)} events/s, p50 ${fmt(r.p50Ms, 2)} ms, p99 ${fmt(r.p99Ms, 2)} ms; ` +
          `status ${JSON.stringify(r.statusCodes)}, non-2xx ${r.non2xx}, errors ${r.errors} (timeouts ${r.timeouts}), body mismatches ${r.mismatches}; ` +
          `CPU (% of a core, ${cpus().length} cores) server ${fmt(r.serverCpuPct, 0)}, load generator ${fmt(r.loadgenCpuPct, 0)}, other processes ${fmt(r.otherCpuPct, 0)}` +
          (r.sinkRecords === undefined ? '' : `; mapped into the sink at the end ${r.sinkRecords} of ${r.accepted} acknowledged (${fmt((100 * r.sinkRecords) / r.accepted, 0)}%)`) +
          '\n',
      );
      for (const p of r.problems) process.stdout.write(`  PROBLEM: ${p}\n`);
    }
  }

  const med = (name: string, key: keyof RunResult): number => round2(median(runs[name].map((r) => Number(r[key]))));
  const ratio = (name: string): number => round2(median(runs[name].map((r, i) => r.eventsPerSec / runs.bare[i].eventsPerSec)));
  // Counts of the measured runs; the warm-ups' bad answers are in `problems`.
  const sum = (key: 'non2xx' | 'wrongStatus' | 'errors' | 'mismatches' | 'timeouts'): number =>
    Object.values(runs).reduce((n, rs) => n + rs.reduce((m, r) => m + r[key], 0), 0);
  const summary = (name: string) => ({
    eventsPerSec: med(name, 'eventsPerSec'),
    p50Ms: med(name, 'p50Ms'),
    p99Ms: med(name, 'p99Ms'),
    serverCpuPct: med(name, 'serverCpuPct'),
    loadgenCpuPct: med(name, 'loadgenCpuPct'),
    otherCpuPct: med(name, 'otherCpuPct'),
    ...(name === 'bare' ? {} : { sinkRecordsFraction: round2(median(runs[name].map((r) => (r.sinkRecords ?? 0) / r.accepted))) }),
    perRound: runs[name].map((r) => round2(r.eventsPerSec)),
  });
  const ok = problems.length === 0;
  if (!ok) process.stdout.write(`ERRORS: the bench saw ${problems.length} problem(s); its figures are not clean:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  else process.stdout.write('all answers were as expected (status, body OK), no connection errors or timeouts\n');

  return {
    ok,
    rounds,
    durationSec: settings.duration,
    warmupSec: settings.warmup,
    connections: settings.connections,
    pipelining: settings.pipelining,
    bodyBytes: BODY.length,
    bareEventsPerSec: med('bare', 'eventsPerSec'),
    syncFalseEventsPerSec: med('syncFalse', 'eventsPerSec'),
    syncTrueEventsPerSec: med('syncTrue', 'eventsPerSec'),
    templateEventsPerSec: med('template', 'eventsPerSec'),
    syncFalseRatio: ratio('syncFalse'),
    syncTrueRatio: ratio('syncTrue'),
    templateRatio: ratio('template'),
    bareP50Ms: med('bare', 'p50Ms'),
    bareP99Ms: med('bare', 'p99Ms'),
    syncFalseP50Ms: med('syncFalse', 'p50Ms'),
    syncFalseP99Ms: med('syncFalse', 'p99Ms'),
    syncTrueP50Ms: med('syncTrue', 'p50Ms'),
    syncTrueP99Ms: med('syncTrue', 'p99Ms'),
    templateP50Ms: med('template', 'p50Ms'),
    templateP99Ms: med('template', 'p99Ms'),
    non2xx: sum('non2xx'),
    wrongStatus: sum('wrongStatus'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    mismatches: sum('mismatches'),
    problems,
    cases: Object.fromEntries(cases.map((c) => [c.name, summary(c.name)])),
  };
}

interface LoadSettings {
  duration: number;
  warmup: number;
  connections: number;
  pipelining: number;
}

interface Case {
  name: string;
  /** The status every answer must have. */
  expectStatus: 200 | 202;
  /** Undefined for the bare endpoint. */
  syncWait?: boolean;
  columns?: Record<string, unknown>[];
}

interface RunResult {
  eventsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  statusCodes: Record<string, number>;
  non2xx: number;
  /** Answers of the expected class but another status (e.g. 200 where 202 is expected). */
  wrongStatus: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  /** Bad answers of the warm-up (reported as problems, not in the figures). */
  warmupBad: number;
  serverCpuPct: number;
  loadgenCpuPct: number;
  /** CPU the rest of the machine used meanwhile (other processes: the noise), % of one core. */
  otherCpuPct: number;
  /** Records acknowledged by the server over the whole case (probe, warm-up and measured). */
  accepted: number;
  /**
   * The sink's record count (statistics/total) right after the measured run: how far mapping kept
   * up. It may exceed `accepted` by the requests in flight when autocannon stopped (written by the
   * server, their answers not counted).
   */
  sinkRecords?: number;
  problems: string[];
}

/** One realistic event, ~300 bytes; the five path columns read fields of it. */
const BODY = JSON.stringify({
  event: 'checkout.completed',
  timestamp: '2026-11-21T12:34:56.789Z',
  user: { id: 'u-482913', email: 'jane.doe@example.com', country: 'CZ', plan: 'pro' },
  session: { id: '4f1c2b9e-8a7d-4e3b-9c1a-2d5e6f7a8b9c', device: 'mobile' },
  order: { id: 'ord-993217', total: 129.9, currency: 'EUR', items: 3 },
  context: { page: '/checkout/confirm', referrer: 'https://www.example.com/cart', locale: 'cs-CZ' },
});

const PATH_COLUMNS = [
  { type: 'path', name: 'event', path: 'event' },
  { type: 'path', name: 'ts', path: 'timestamp' },
  { type: 'path', name: 'user_id', path: 'user.id' },
  { type: 'path', name: 'total', path: 'order.total' },
  { type: 'path', name: 'page', path: 'context.page' },
];

const TEMPLATE_COLUMNS = [
  { type: 'path', name: 'event', path: 'event' },
  { type: 'path', name: 'total', path: 'order.total' },
  { type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("user.id")' } },
];

/** The baseline: fastify parses the JSON body (its default parser) and answers OK. */
const BARE_SERVER = `
const app = require('fastify')({ logger: false });
app.get('/health-check', async () => 'OK');
app.post('/', async (req, reply) => {
  if (typeof req.body !== 'object' || req.body === null) return reply.code(400).send('not JSON');
  return reply.type('text/plain; charset=utf-8').send('OK');
});
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
`;

const TOKEN = 'bench';
const CLK_TCK = clockTicks();

async function runCase(c: Case, main: string, settings: LoadSettings): Promise<RunResult> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dir = c.syncWait === undefined ? undefined : mkdtempSync(join(tmpdir(), 'sluice-bench-ingest-'));
  const server = new ServerProcess(
    c.syncWait === undefined ? ['-e', BARE_SERVER] : [main, 'serve'],
    {
      PORT: String(port),
      SLUICE_PORT: String(port),
      SLUICE_HOST: '127.0.0.1',
      SLUICE_DATA_DIR: dir ?? '',
      SLUICE_MASTER_TOKEN: TOKEN,
      SLUICE_LOG_LEVEL: 'warn',
    },
  );
  const problems: string[] = [];
  try {
    await server.ready(base);
    const path = c.syncWait === undefined ? '/' : await setUpSource(base, c);
    const url = base + path;

    // One probe request, to fail early with a readable answer.
    const probe = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
    const probeBody = await probe.text();
    if (probe.status !== c.expectStatus || probeBody !== 'OK') {
      throw new Error(`probe answered ${probe.status} ${probeBody.slice(0, 300)} (expected ${c.expectStatus} OK)`);
    }

    const { res: warm } = await load(url, settings, settings.warmup, c.expectStatus);
    const warmupBad = warm.non2xx + warm.errors + warm.mismatches + wrongStatusOf(warm, c.expectStatus);
    if (warmupBad > 0) problems.push(`warm-up: ${describeBad(warm, c.expectStatus)}`);

    const cpuBefore = process.cpuUsage();
    const serverBefore = procCpuSec(server.pid);
    const machineBefore = machineBusySec();
    const { res, latencies } = await load(url, settings, settings.duration, c.expectStatus);
    const loadgen = process.cpuUsage(cpuBefore);
    const serverCpu = procCpuSec(server.pid) - serverBefore;
    const machineBusy = machineBusySec() - machineBefore;

    const statusCodes = statusCodesOf(res);
    const good = statusCodes[String(c.expectStatus)] ?? 0;
    const wrongStatus = wrongStatusOf(res, c.expectStatus);
    if (res.non2xx + res.errors + res.mismatches + wrongStatus > 0) problems.push(describeBad(res, c.expectStatus));
    const accepted = 1 + (statusCodesOf(warm)[String(c.expectStatus)] ?? 0) + good;

    let sinkRecords: number | undefined;
    if (c.syncWait !== undefined) {
      const stats = (await apiCall(base, TOKEN, 'GET', '/v1/branches/default/sources/bench/sinks/bench/statistics/total')) as { total?: { recordsCount?: number } };
      sinkRecords = stats.total?.recordsCount ?? 0;
    }
    if (server.exited) problems.push(`the server exited during the run: ${server.describeExit()}`);
    return {
      eventsPerSec: good / res.duration,
      p50Ms: percentile(latencies.sort(), 50),
      p99Ms: percentile(latencies, 99),
      statusCodes,
      non2xx: res.non2xx,
      wrongStatus,
      errors: res.errors,
      timeouts: res.timeouts,
      mismatches: res.mismatches,
      warmupBad,
      serverCpuPct: (100 * serverCpu) / res.duration,
      loadgenCpuPct: (100 * (loadgen.user + loadgen.system)) / 1e6 / res.duration,
      otherCpuPct: Math.max(0, (100 * (machineBusy - serverCpu - (loadgen.user + loadgen.system) / 1e6)) / res.duration),
      accepted,
      sinkRecords,
      problems,
    };
  } catch (err) {
    const detail = server.exited ? `; the server exited: ${server.describeExit()}` : '';
    throw new Error(`${c.name}: ${(err as Error).message}${detail}`, { cause: err });
  } finally {
    const started = performance.now();
    const stopped = await server.stop(15_000);
    const stopMs = performance.now() - started;
    if (!stopped) process.stdout.write(`  ${c.name}: the server did not stop within 15 s of SIGTERM and was killed\n`);
    else if (server.exitCode !== 0 && server.exitSignal !== 'SIGTERM' && c.syncWait !== undefined) {
      process.stdout.write(`  ${c.name}: the server stopped with ${server.describeExit()}\n`);
    }
    if (c.syncWait !== undefined) process.stdout.write(`  ${c.name}: graceful stop took ${fmt(stopMs, 0)} ms\n`);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates source `bench` and its sink `bench` with the case's columns and sync.wait; returns the ingestion path. */
async function setUpSource(base: string, c: Case): Promise<string> {
  const sources = '/v1/branches/default/sources';
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', sources, { sourceId: 'bench', name: 'bench', type: 'http' }));
  const sink = {
    sinkId: 'bench',
    name: 'bench',
    type: 'table',
    table: { type: 'keboola', tableId: 'in.c-bench.events', mapping: { columns: c.columns } },
  };
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', `${sources}/bench/sinks`, sink));
  const setting = { settings: [{ key: 'storage.level.local.encoding.sync.wait', value: c.syncWait }] };
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `${sources}/bench/sinks/bench/settings`, setting));
  const source = (await apiCall(base, TOKEN, 'GET', `${sources}/bench`)) as { http?: { url?: string } };
  if (!source.http?.url) throw new Error(`source has no http.url: ${JSON.stringify(source)}`);
  // The URL's host is the public one; the path is what this server routes.
  return new URL(source.http.url).pathname;
}

interface Load {
  res: autocannon.Result;
  /** Latencies (ms, sub-millisecond: autocannon's own histogram keeps whole ms) of the answers with the expected status. */
  latencies: Float64Array;
}

function load(url: string, settings: LoadSettings, duration: number, expectStatus: number): Promise<Load> {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 16);
    let n = 0;
    const instance = autocannon(
      {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: BODY,
        connections: settings.connections,
        pipelining: settings.pipelining,
        duration,
        expectBody: 'OK',
      },
      (err, res) => (err ? reject(err) : resolve({ res, latencies: latencies.subarray(0, n) })),
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode !== expectStatus) return;
      if (n === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[n++] = responseTime;
    });
  });
}

/** Nearest-rank percentile of a sorted array. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function statusCodesOf(res: autocannon.Result): Record<string, number> {
  const stats = (res as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  return Object.fromEntries(Object.entries(stats).map(([code, s]) => [code, s.count]));
}

function wrongStatusOf(res: autocannon.Result, expect: number): number {
  return Object.entries(statusCodesOf(res)).reduce((n, [code, count]) => n + (code.startsWith('2') && code !== String(expect) ? count : 0), 0);
}

function describeBad(res: autocannon.Result, expect: number): string {
  return (
    `status ${JSON.stringify(statusCodesOf(res))} (expected only ${expect}), non-2xx ${res.non2xx}, ` +
    `errors ${res.errors} (timeouts ${res.timeouts}), bodies other than OK ${res.mismatches}`
  );
}

/** User + system CPU seconds of a process (all its threads) from /proc; 0 where /proc is missing. */
function procCpuSec(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5) (utime, stime); the split starts at field 3.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** CPU seconds the whole machine spent busy (all cores; /proc/stat), 0 where /proc is missing. */
function machineBusySec(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    const busy = fields.slice(0, 8).reduce((a, b) => a + b, 0) - fields[3] - fields[4];
    return busy / CLK_TCK;
  } catch {
    return 0;
  }
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

function fmt(x: number, digits: number): string {
  return x.toFixed(digits);
}
