/**
 * A single-node Kafka broker in the background, for development, tests and CI: formats its
 * KRaft log directory on the first start, runs `java kafka.Kafka` detached from the caller, and
 * keeps its pid and address in `<dir>/broker.json`, so that `stop` and `status` from another
 * process find it. Everything of one broker lives in its folder (`dir`).
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { endProcess, freePort, isAlive, isFree, sleep } from '../background-process.js';
import { log4jProperties, newClusterId, serverProperties, type BrokerPorts } from './broker-config.js';
import { DEFAULT_KAFKA_VERSION, ensureDistribution, type KafkaDistribution } from './distribution.js';

const run = promisify(execFile);
const STATE_FILE = 'broker.json';
const MAIN_CLASS = 'kafka.Kafka';
const STORAGE_TOOL = 'kafka.tools.StorageTool';

export interface BrokerOptions {
  /** The broker's folder: configuration, KRaft log directory, log file, pid. */
  dir: string;
  /** Kafka version from Maven Central (default DEFAULT_KAFKA_VERSION). */
  version?: string;
  host?: string;
  /** Client port; default: the one of the last start if still free, else a free one. */
  port?: number;
  /** JVM heap limit, e.g. 384m (default). */
  heap?: string;
  /** How long to wait for the broker to answer (default 90 s). */
  readyTimeoutMs?: number;
  /** Progress lines (download, format, start). */
  log?: (line: string) => void;
}

export interface BrokerState extends BrokerPorts {
  pid: number;
  host: string;
  /** host:port, what clients take as their bootstrap servers. */
  bootstrap: string;
  version: string;
  startedAt: string;
}

export interface BrokerStatus {
  running: boolean;
  state?: BrokerState;
}

/** The broker of `dir` as its state file describes it, if that process still runs Kafka. */
export function brokerStatus(dir: string): BrokerStatus {
  const state = readState(dir);
  if (!state) return { running: false };
  return { running: state.pid > 0 && isKafkaProcess(state.pid), state };
}

/**
 * Starts the broker of `dir` unless it runs already, and resolves once it answers metadata
 * requests. Idempotent: a running broker is only checked and its state returned.
 */
export async function startBroker(options: BrokerOptions): Promise<BrokerState> {
  const log = options.log ?? (() => undefined);
  const dir = options.dir;
  const current = brokerStatus(dir);
  if (current.running && current.state) {
    await waitReady(current.state, options.readyTimeoutMs ?? 90_000);
    log(`broker already running (pid ${current.state.pid})`);
    return current.state;
  }
  const dist = await ensureDistribution(options.version ?? DEFAULT_KAFKA_VERSION, log);
  mkdirSync(dir, { recursive: true });
  const host = options.host ?? '127.0.0.1';
  const ports = await choosePorts(host, options.port, current.state);
  const logDir = join(dir, 'kraft');
  const config = join(dir, 'server.properties');
  writeFileSync(config, serverProperties(host, ports, logDir));
  writeFileSync(join(dir, 'log4j.properties'), log4jProperties(join(dir, 'server.log')));
  if (!existsSync(join(logDir, 'meta.properties'))) {
    log(`formatting the KRaft log directory ${logDir}`);
    await runJava(dist, dir, [STORAGE_TOOL, 'format', `--cluster-id=${newClusterId()}`, '-c', config, '--ignore-formatted']);
  }

  const out = openSync(join(dir, 'broker.out'), 'a');
  const child = spawn(javaBin(), [...jvmOptions(dist, dir, options.heap ?? '384m'), MAIN_CLASS, config], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  if (child.pid === undefined) throw new Error('java could not be started (is a JDK 17+ on PATH?)');
  let exited: string | undefined;
  child.on('exit', (code, signal) => (exited = `exit code ${code ?? signal}`));
  child.on('error', (err) => (exited = err.message));
  child.unref();
  const state: BrokerState = { pid: child.pid, host, ...ports, bootstrap: `${host}:${ports.port}`, version: dist.version, startedAt: new Date().toISOString() };
  writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2) + '\n');
  log(`broker starting (pid ${child.pid}, log ${join(dir, 'server.log')})`);
  try {
    await waitReady(state, options.readyTimeoutMs ?? 90_000, () => exited);
  } catch (err) {
    await stopBroker(dir).catch(() => undefined);
    throw new Error(`${(err as Error).message}\n${logTail(dir)}`, { cause: err });
  }
  return state;
}

/** Stops the broker of `dir` (SIGTERM, then SIGKILL after `graceMs`); true if one was running. */
export async function stopBroker(dir: string, graceMs = 20_000): Promise<boolean> {
  const { running, state } = brokerStatus(dir);
  if (!state || state.pid === 0) return false;
  if (running) await endProcess(state.pid, 'SIGTERM', graceMs, 'SIGKILL');
  // The state stays (pid 0): the next start takes the same ports again if they are free.
  writeFileSync(join(dir, STATE_FILE), JSON.stringify({ ...state, pid: 0 }, null, 2) + '\n');
  return running;
}

function javaBin(): string {
  return process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/** A small heap and the serial collector: the broker shares two cores with Node and the tests. */
function jvmOptions(dist: KafkaDistribution, dir: string, heap: string): string[] {
  return [
    `-Xmx${heap}`,
    '-Xms64m',
    '-XX:+UseSerialGC',
    // Starts faster and spends less CPU compiling; plenty for development loads.
    '-XX:TieredStopAtLevel=1',
    '-XX:-UsePerfData',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
    `-Dkafka.logs.dir=${dir}`,
    '-cp',
    join(dist.libDir, '*'),
  ];
}

async function runJava(dist: KafkaDistribution, dir: string, args: string[]): Promise<void> {
  try {
    await run(javaBin(), [...jvmOptions(dist, dir, '256m'), ...args], { cwd: dir, timeout: 120_000 });
  } catch (err) {
    const e = err as { code?: string; stdout?: string; stderr?: string; message: string };
    if (e.code === 'ENOENT') throw new Error('sluice kafka needs java (JDK 17 or later) on PATH or in JAVA_HOME.');
    throw new Error(`${args[0]} failed: ${(e.stderr || e.stdout || e.message).trim().slice(-2000)}`);
  }
}

/** Keeps the ports of the last start when they are free (stable addresses), else takes free ones. */
async function choosePorts(host: string, wanted: number | undefined, last: BrokerState | undefined): Promise<BrokerPorts> {
  const port = wanted ?? (last && (await isFree(host, last.port)) ? last.port : await freePort(host));
  let controllerPort = last && last.controllerPort !== port && (await isFree(host, last.controllerPort)) ? last.controllerPort : await freePort(host);
  while (controllerPort === port) controllerPort = await freePort(host);
  return { port, controllerPort };
}

/** Ready means: the broker answers a metadata request with itself as controller, and group requests. */
async function waitReady(state: BrokerState, timeoutMs: number, exited: () => string | undefined = () => undefined): Promise<void> {
  const kafka = new Kafka({ clientId: 'sluice-kafka-cli', brokers: [state.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 1000, retry: { retries: 0 } });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = exited() ?? (isAlive(state.pid) ? undefined : 'the process is gone');
    if (why) throw new Error(`The Kafka broker stopped during its start (${why}).`);
    const admin = kafka.admin({ retry: { retries: 0 } });
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      // A group request makes the broker create its offsets topic: the first consumer need not wait for it.
      if (cluster.brokers.length > 0 && cluster.controller !== null) {
        await admin.describeGroups(['sluice-kafka-ready']);
        return;
      }
    } catch {
      // Not listening yet, or the controller not elected yet.
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    if (Date.now() > deadline) throw new Error(`The Kafka broker did not become ready within ${Math.round(timeoutMs / 1000)} s.`);
    await sleep(250);
  }
}

function readState(dir: string): BrokerState | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as BrokerState;
  } catch {
    return undefined;
  }
}

/** Alive and running kafka.Kafka: a reused pid of another program is never signalled. */
function isKafkaProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(MAIN_CLASS);
  } catch {
    // No /proc (macOS): trust the pid.
    return true;
  }
}

function logTail(dir: string): string {
  const parts: string[] = [];
  for (const name of ['broker.out', 'server.log']) {
    try {
      const text = readFileSync(join(dir, name), 'utf8').trim();
      if (text) parts.push(`--- ${name} (end) ---\n${text.slice(-3000)}`);
    } catch {
      // not written
    }
  }
  return parts.join('\n');
}
