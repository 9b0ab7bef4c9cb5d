import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { apiCall, freePort, machineBusySec, median, procCpuSec, round2, ServerProcess, waitTask, serveNodeFlags } from './util.js';

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
 * case leaves in the pipeline does not load the next. Each round runs the cases in a rotated
 * order (machine noise hits all alike); figures are medians over rounds, ratios are medians of
 * the per-round ratios against the baseline of the same round. Every answer is checked:
 * status (200 / 202 as the case expects), body `OK`, connection errors and timeouts; a run with
 * any of them says so (`ok: false`, `problems`).
 *
 * With `--kafka` the cases are instead the event logs side by side, all with the syncFalse sink:
 *
 *  - embedded:       the embedded LMDB log, sync.wait=false (202): the baseline
 *  - kafka:          `serve --kafka <bootstrap>`, sync.wait=false (202)
 *  - kafkaSyncTrue:  the same with sync.wait=true (200 once the broker acknowledged, acks=all)
 *
 * The bench starts its own single-node broker (`sluice kafka start` in a temporary folder) and
 * stops it at the end, also on failure or Ctrl-C. Every Kafka case run gets its own topic
 * prefix, so that no case reads or competes with the topic of another.
 *
 * Beside each case: CPU of the server process (all threads), of this process (the load
 * generator), of the Kafka broker (with --kafka) and of the rest of the machine (busy time of
 * /proc/stat minus those: other processes, but also kernel threads flushing the server's
 * writes), each in % of one core; latencies are recorded per answer with sub-millisecond
 * precision; and how many records had reached the sink's local slice when the load stopped
 * (mapping runs behind ingestion, e.g. with templates).
 *
 * With `--floors` the cases show what the parts of the path cost, each a step further than the
 * one before, all against the same bare baseline:
 *
 *  - bareLmdb:    the bare app plus one put per request into an LMDB environment opened as the
 *                 embedded log opens its own (synced commits), answered 202 without waiting
 *  - bareFile:    the bare app plus the body appended to a plain file, one write per event-loop
 *                 turn and one fdatasync at a time (a group commit), answered 202
 *  - sourceOnly:  Sluice, a source without sinks, sync.wait=false: the ingestion route and the
 *                 embedded log, no mapping
 *  - syncFalse:   as in the default cases
 *
 * With `--scrape` the cases are syncFalse and the same with GET /metrics every second while the
 * load runs (`syncFalseScrapedRatio`: what a Prometheus scraping the node costs ingestion).
 *
 * `npm run bench -- ingest [--kafka | --floors | --scrape] [--duration 10] [--warmup 2] [--connections 50] [--rounds 3]`
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

  if (!args.includes('--kafka')) {
    const mode = args.includes('--floors') ? FLOORS_MODE : args.includes('--scrape') ? SCRAPE_MODE : DEFAULT_MODE;
    printHeader(mode, rounds, settings);
    const { runs, problems } = await runRounds(mode, rounds, (c) => runCase(c, main, settings));
    return results(mode, runs, problems, rounds, settings);
  }

  const broker = await startBenchBroker(main);
  try {
    printHeader(KAFKA_MODE, rounds, settings, `Kafka ${broker.version} broker at ${broker.bootstrap}`);
    const { runs, problems } = await runRounds(KAFKA_MODE, rounds, (c, round) =>
      runCase(c, main, settings, c.kafka ? kafkaServer(broker, `bench.r${round + 1}.${c.name}.`) : {}),
    );
    return { ...results(KAFKA_MODE, runs, problems, rounds, settings), kafkaVersion: broker.version };
  } finally {
    broker.stop();
  }
}

/** The cases of one invocation and the one the others are compared with (`<name>Ratio`). */
interface Mode {
  cases: Case[];
  baseline: string;
}

function printHeader(mode: Mode, rounds: number, settings: LoadSettings, extra?: string): void {
  process.stdout.write(
    `ingest: ${rounds} round(s) of ${mode.cases.map((c) => c.name).join(', ')}; autocannon ${settings.connections} connections, ` +
      `pipelining ${settings.pipelining}, warm-up ${settings.warmup} s, ${settings.duration} s measured; ` +
      `event ${BODY.length} bytes; ${extra ? `${extra}; ` : ''}load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`,
  );
}

/** Runs every case once per round, starting each round one case later; prints each run. */
async function runRounds(
  mode: Mode,
  rounds: number,
  run: (c: Case, round: number) => Promise<RunResult>,
): Promise<{ runs: Record<string, RunResult[]>; problems: string[] }> {
  const runs: Record<string, RunResult[]> = Object.fromEntries(mode.cases.map((c) => [c.name, []]));
  const problems: string[] = [];
  const nameWidth = Math.max(9, ...mode.cases.map((c) => c.name.length));
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < mode.cases.length; k++) {
      const c = mode.cases[(round + k) % mode.cases.length];
      const r = await run(c, round);
      runs[c.name].push(r);
      problems.push(...r.problems.map((p) => `round ${round + 1} ${c.name}: ${p}`));
      process.stdout.write(
        `round ${round + 1}/${rounds} ${c.name.padEnd(nameWidth)} ${fmt(r.eventsPerSec, 0).padStart(6)} events/s, p50 ${fmt(r.p50Ms, 2)} ms, p99 ${fmt(r.p99Ms, 2)} ms; ` +
          `status ${JSON.stringify(r.statusCodes)}, non-2xx ${r.non2xx}, errors ${r.errors} (timeouts ${r.timeouts}), body mismatches ${r.mismatches}; ` +
          `CPU (% of a core, ${cpus().length} cores) server ${fmt(r.serverCpuPct, 0)}, load generator ${fmt(r.loadgenCpuPct, 0)}, ` +
          (r.brokerCpuPct === undefined ? '' : `Kafka broker ${fmt(r.brokerCpuPct, 0)}, `) +
          `other processes ${fmt(r.otherCpuPct, 0)}` +
          (r.sinkRecords === undefined ? '' : `; mapped into the sink at the end ${r.sinkRecords} of ${r.accepted} acknowledged (${fmt((100 * r.sinkRecords) / r.accepted, 0)}%)`) +
          '\n',
      );
      for (const p of r.problems) process.stdout.write(`  PROBLEM: ${p}\n`);
    }
  }
  return { runs, problems };
}

/**
 * The bench's result object: medians per case (`<name>EventsPerSec`, `<name>P50Ms`, ...), ratios
 * of the other cases to the baseline (`<name>Ratio`, medians of per-round ratios), counts of bad
 * answers and the problems.
 */
function results(mode: Mode, runs: Record<string, RunResult[]>, problems: string[], rounds: number, settings: LoadSettings): Record<string, unknown> {
  const names = mode.cases.map((c) => c.name);
  const others = names.filter((n) => n !== mode.baseline);
  const med = (name: string, key: keyof RunResult): number => round2(median(runs[name].map((r) => Number(r[key]))));
  const ratio = (name: string): number => round2(median(runs[name].map((r, i) => r.eventsPerSec / runs[mode.baseline][i].eventsPerSec)));
  // Counts of the measured runs; the warm-ups' bad answers are in `problems`.
  const sum = (key: 'non2xx' | 'wrongStatus' | 'errors' | 'mismatches' | 'timeouts'): number =>
    Object.values(runs).reduce((n, rs) => n + rs.reduce((m, r) => m + r[key], 0), 0);
  const summary = (c: Case) => ({
    eventsPerSec: med(c.name, 'eventsPerSec'),
    p50Ms: med(c.name, 'p50Ms'),
    p99Ms: med(c.name, 'p99Ms'),
    serverCpuPct: med(c.name, 'serverCpuPct'),
    loadgenCpuPct: med(c.name, 'loadgenCpuPct'),
    ...(c.kafka ? { brokerCpuPct: med(c.name, 'brokerCpuPct') } : {}),
    otherCpuPct: med(c.name, 'otherCpuPct'),
    ...(!c.columns ? {} : { sinkRecordsFraction: round2(median(runs[c.name].map((r) => (r.sinkRecords ?? 0) / r.accepted))) }),
    perRound: runs[c.name].map((r) => round2(r.eventsPerSec)),
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
    ...Object.fromEntries(names.map((n) => [`${n}EventsPerSec`, med(n, 'eventsPerSec')])),
    ...Object.fromEntries(others.map((n) => [`${n}Ratio`, ratio(n)])),
    ...Object.fromEntries(names.flatMap((n) => [[`${n}P50Ms`, med(n, 'p50Ms')], [`${n}P99Ms`, med(n, 'p99Ms')]])),
    non2xx: sum('non2xx'),
    wrongStatus: sum('wrongStatus'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    mismatches: sum('mismatches'),
    problems,
    cases: Object.fromEntries(mode.cases.map((c) => [c.name, summary(c)])),
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
  /** Undefined for the bare endpoints. */
  syncWait?: boolean;
  /** The sink's columns; a Sluice case without them has a source and no sink. */
  columns?: Record<string, unknown>[];
  /** A bare endpoint other than BARE_SERVER: a fastify app as code for `node -e` (its folder in env DIR). */
  script?: string;
  /** The server's event log is the bench's Kafka broker (see kafkaServer) instead of the embedded one. */
  kafka?: boolean;
  /** GET /metrics this often (seconds) while the load runs, as a Prometheus would. */
  scrapeEverySec?: number;
}

/** What a case's server gets beyond the common settings. */
interface ServerExtras {
  env?: Record<string, string>;
  /** A process whose CPU is reported apart from "other processes" (the Kafka broker). */
  brokerPid?: number;
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
  /** CPU of the Kafka broker meanwhile, % of one core (Kafka cases only). */
  brokerCpuPct?: number;
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

const DEFAULT_MODE: Mode = {
  baseline: 'bare',
  cases: [
    { name: 'bare', expectStatus: 200 },
    { name: 'syncFalse', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS },
    { name: 'syncTrue', expectStatus: 200, syncWait: true, columns: PATH_COLUMNS },
    { name: 'template', expectStatus: 202, syncWait: false, columns: TEMPLATE_COLUMNS },
  ],
};

const FLOORS_MODE: Mode = {
  baseline: 'bare',
  cases: [
    { name: 'bare', expectStatus: 200 },
    { name: 'bareLmdb', expectStatus: 202, script: bareWith('lmdb') },
    { name: 'bareFile', expectStatus: 202, script: bareWith('file') },
    { name: 'sourceOnly', expectStatus: 202, syncWait: false },
    { name: 'syncFalse', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS },
  ],
};

/** `--scrape`: what scraping GET /metrics every second costs the ingest path (issue 15: under 3 %). */
const SCRAPE_MODE: Mode = {
  baseline: 'syncFalse',
  cases: [
    { name: 'syncFalse', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS },
    { name: 'syncFalseScraped', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS, scrapeEverySec: 1 },
  ],
};

const KAFKA_MODE: Mode = {
  baseline: 'embedded',
  cases: [
    { name: 'embedded', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS },
    { name: 'kafka', expectStatus: 202, syncWait: false, columns: PATH_COLUMNS, kafka: true },
    { name: 'kafkaSyncTrue', expectStatus: 200, syncWait: true, columns: PATH_COLUMNS, kafka: true },
  ],
};

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

/**
 * The bare app that also keeps each body (see FLOORS_MODE): in LMDB, one put per request with
 * the embedded log's environment options, or appended to a file per event-loop turn with one
 * fdatasync in flight. Both answer before the write is durable, as sync.wait=false does.
 */
function bareWith(store: 'lmdb' | 'file'): string {
  const keep =
    store === 'lmdb'
      ? `
const root = require('lmdb').open({ path: process.env.DIR + '/log', overlappingSync: false, noSync: false, compression: false, pageSize: 16384, maxDbs: 2 });
const db = root.openDB('t/bench', { encoding: 'binary' });
let offset = 0;
const keep = (body) => { db.put(++offset, body, { append: true }).catch(() => undefined); };`
      : `
const fs = require('node:fs');
const fd = fs.openSync(process.env.DIR + '/log', 'a');
let pending = [], syncing = false, again = false;
const sync = () => { if (syncing) { again = true; return; } syncing = true; again = false; fs.fdatasync(fd, () => { syncing = false; if (again) sync(); }); };
const keep = (body) => {
  pending.push(body);
  if (pending.length === 1) setImmediate(() => { const data = Buffer.concat(pending); pending = []; fs.write(fd, data, () => sync()); });
};`;
  return `${keep}
const app = require('fastify')({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
  try { JSON.parse(body); done(null, body); } catch (err) { done(err); }
});
app.get('/health-check', async () => 'OK');
app.post('/', async (req, reply) => {
  keep(req.body);
  return reply.code(202).type('text/plain; charset=utf-8').send('OK');
});
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
`;
}

const TOKEN = 'bench';

async function runCase(c: Case, main: string, settings: LoadSettings, extras: ServerExtras = {}): Promise<RunResult> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const bare = c.syncWait === undefined;
  const dir = bare && !c.script ? undefined : mkdtempSync(join(tmpdir(), 'sluice-bench-ingest-'));
  const server = new ServerProcess(
    [...serveNodeFlags(), ...(bare ? ['-e', c.script ?? BARE_SERVER] : [main, 'serve'])],
    {
      PORT: String(port),
      DIR: dir ?? '',
      SLUICE_PORT: String(port),
      SLUICE_OTLP_GRPC_PORT: '0',
      SLUICE_HOST: '127.0.0.1',
      SLUICE_DATA_DIR: dir ?? '',
      SLUICE_MASTER_TOKEN: TOKEN,
      SLUICE_LOG_LEVEL: 'warn',
      // This bench measures ingestion: no back-pressure from the sinks (429s); the e2e bench has it.
      SLUICE_MAX_SINK_BACKLOG: '0',
      ...extras.env,
    },
  );
  const problems: string[] = [];
  try {
    await server.ready(base);
    const path = bare ? '/' : await setUpSource(base, c);
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

    // A scraper as Prometheus would be one: GET /metrics on a timer while the load runs.
    let scrapes = 0;
    const scraper = c.scrapeEverySec === undefined ? undefined : setInterval(() => {
      fetch(`${base}/metrics`).then(async (r) => {
        await r.text();
        if (r.status === 200) scrapes++;
        else problems.push(`GET /metrics answered ${r.status}`);
      }, (err: unknown) => problems.push(`GET /metrics failed: ${(err as Error).message}`));
    }, c.scrapeEverySec * 1000);
    const cpuBefore = process.cpuUsage();
    const serverBefore = procCpuSec(server.pid);
    const brokerBefore = extras.brokerPid ? procCpuSec(extras.brokerPid) : 0;
    const machineBefore = machineBusySec();
    const { res, latencies } = await load(url, settings, settings.duration, c.expectStatus);
    const loadgen = process.cpuUsage(cpuBefore);
    const serverCpu = procCpuSec(server.pid) - serverBefore;
    const brokerCpu = extras.brokerPid ? procCpuSec(extras.brokerPid) - brokerBefore : 0;
    const machineBusy = machineBusySec() - machineBefore;
    const loadgenCpu = (loadgen.user + loadgen.system) / 1e6;
    if (scraper) {
      clearInterval(scraper);
      if (scrapes < Math.floor(settings.duration / c.scrapeEverySec!) - 1) problems.push(`only ${scrapes} scrapes answered in ${settings.duration} s`);
    }

    const statusCodes = statusCodesOf(res);
    const good = statusCodes[String(c.expectStatus)] ?? 0;
    const wrongStatus = wrongStatusOf(res, c.expectStatus);
    if (res.non2xx + res.errors + res.mismatches + wrongStatus > 0) problems.push(describeBad(res, c.expectStatus));
    const accepted = 1 + (statusCodesOf(warm)[String(c.expectStatus)] ?? 0) + good;

    let sinkRecords: number | undefined;
    if (c.columns) {
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
      loadgenCpuPct: (100 * loadgenCpu) / res.duration,
      brokerCpuPct: extras.brokerPid ? (100 * brokerCpu) / res.duration : undefined,
      otherCpuPct: Math.max(0, (100 * (machineBusy - serverCpu - loadgenCpu - brokerCpu)) / res.duration),
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
    else if (server.exitCode !== 0 && server.exitSignal !== 'SIGTERM' && !bare) {
      process.stdout.write(`  ${c.name}: the server stopped with ${server.describeExit()}\n`);
    }
    if (!bare) process.stdout.write(`  ${c.name}: graceful stop took ${fmt(stopMs, 0)} ms\n`);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The Kafka broker of `--kafka`.

interface BenchBroker {
  bootstrap: string;
  version: string;
  pid?: number;
  /** Stops the broker and deletes its folder; synchronous, so that a signal handler can call it. */
  stop(): void;
}

/**
 * Starts a single-node broker with the project's own `sluice kafka start`, in a temporary folder
 * (not the developer's ~/.cache/sluice/broker, which may be in use); the Kafka download stays
 * cached there. The broker runs detached, so it would outlive the bench: it is stopped when
 * start fails, by the caller's `finally`, and on SIGINT / SIGTERM.
 */
async function startBenchBroker(main: string): Promise<BenchBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-kafka-'));
  const kafkaCli = (command: string) => [main, 'kafka', command, '--dir', dir];
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    try {
      execFileSync(process.execPath, kafkaCli('stop'), { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
    } catch (err) {
      process.stdout.write(`  kafka: stopping the broker failed (see ${dir}): ${(err as Error).message}\n`);
      return;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  function onSignal(signal: NodeJS.Signals): void {
    process.stdout.write(`${signal}: stopping the Kafka broker\n`);
    stop();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  }
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);

  process.stdout.write(`kafka: starting a broker in ${dir}\n`);
  try {
    // The first start on a machine downloads Kafka with Maven: a generous timeout.
    const { stdout, stderr } = await promisify(execFile)(process.execPath, kafkaCli('start'), { timeout: 300_000 });
    for (const line of stderr.trim().split('\n')) process.stdout.write(`  ${line}\n`);
    const bootstrap = stdout.trim().split('\n').pop() ?? '';
    if (!/^[^\s:]+:\d+$/.test(bootstrap)) throw new Error(`"kafka start" printed no bootstrap address: ${stdout}`);
    const state = brokerState(dir);
    return { bootstrap, version: state.version ?? 'unknown', pid: state.pid, stop };
  } catch (err) {
    stop();
    const e = err as { stderr?: string; message: string };
    throw new Error(`the Kafka broker did not start: ${(e.stderr || e.message).trim().slice(-2000)}`, { cause: err });
  }
}

/** Pid and version from the broker's state file (`<dir>/broker.json`), for the CPU figures. */
function brokerState(dir: string): { pid?: number; version?: string } {
  try {
    const state = JSON.parse(readFileSync(join(dir, 'broker.json'), 'utf8')) as { pid?: number; version?: string };
    return { pid: state.pid || undefined, version: state.version };
  } catch {
    return {};
  }
}

/**
 * A Kafka case's server: the broker as its event log, and topics under a prefix of its own (the
 * source is `bench` in every case), so that it never reads the records an earlier case left in
 * the broker (its fresh data directory would read its topic from the beginning).
 */
function kafkaServer(broker: BenchBroker, topicPrefix: string): ServerExtras {
  return { env: { SLUICE_KAFKA_BROKERS: broker.bootstrap, SLUICE_KAFKA_TOPIC_PREFIX: topicPrefix }, brokerPid: broker.pid };
}

/** Creates source `bench` and its sink `bench` with the case's columns and sync.wait; returns the ingestion path. */
async function setUpSource(base: string, c: Case): Promise<string> {
  const sources = '/v1/branches/default/sources';
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', sources, { sourceId: 'bench', name: 'bench', type: 'http' }));
  const setting = { settings: [{ key: 'storage.level.local.encoding.sync.wait', value: c.syncWait }] };
  if (!c.columns) {
    // No sink: the source's own setting decides whether answers wait for durability.
    await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `${sources}/bench/settings`, setting));
    return ingestionPath(base);
  }
  const sink = {
    sinkId: 'bench',
    name: 'bench',
    type: 'table',
    table: { type: 'keboola', tableId: 'in.c-bench.events', mapping: { columns: c.columns } },
  };
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'POST', `${sources}/bench/sinks`, sink));
  await waitTask(base, TOKEN, await apiCall(base, TOKEN, 'PATCH', `${sources}/bench/sinks/bench/settings`, setting));
  return ingestionPath(base);
}

async function ingestionPath(base: string): Promise<string> {
  const source = (await apiCall(base, TOKEN, 'GET', '/v1/branches/default/sources/bench')) as { http?: { url?: string } };
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

function fmt(x: number, digits: number): string {
  return x.toFixed(digits);
}
