/**
 * A real Kafka Connect worker with a real HTTP sink connector, for tests:
 * `scripts/build-kafka-connect-http.sh` puts Apache Kafka's Connect runtime (from Maven Central)
 * and Aiven's http-connector-for-apache-kafka (compiled from the sources vendored in
 * test/fixtures/kafka-connect/aiven-http-connector) into a cache outside the repository, and
 * ConnectWorker runs `connect-standalone` (the class bin/connect-standalone.sh runs) on them,
 * driven through Connect's own REST API. The only reason to skip is a machine without a JDK or
 * Maven (and without a finished build).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runBuildScript, startBuildInBackground, type BuildScript } from './build-scripts.js';
import { ToolProcess } from './tool-process.js';

/** Test files that run a Connect worker: the global setup starts the build early when the run has one. */
export const KAFKA_CONNECT_TEST_FILES = /test\/integration\/kafka-connect-[^/]*\.test\.ts$/;
/** A cold build (Maven downloads, javac; 15 s here with a warm Maven repository) on a loaded machine. */
export const KAFKA_CONNECT_BUILD_TIMEOUT_MS = 10 * 60_000;

const BUILD: BuildScript = {
  script: resolve('scripts/build-kafka-connect-http.sh'),
  label: 'kafka-connect',
  exitNoToolchain: 3,
  timeoutMs: KAFKA_CONNECT_BUILD_TIMEOUT_MS,
};

export interface KafkaConnectBuild {
  /** The worker's class path (a folder of jars, as `-cp dir/*`). */
  libs: string;
  /** The worker's plugin.path: one folder per plugin. */
  plugins: string;
}

/** The build's folders, building first when needed, or the reason to skip (no JDK or Maven). */
export async function ensureKafkaConnect(): Promise<{ build: KafkaConnectBuild } | { skip: string }> {
  const built = await runBuildScript(BUILD);
  if ('skip' in built) return built;
  return { build: { libs: join(built.dir, 'worker', 'libs'), plugins: join(built.dir, 'plugins') } };
}

/** Starts the build in the background (the global setup); returns a stop function for the run's end. */
export function prebuildKafkaConnect(): () => void {
  return startBuildInBackground(BUILD);
}

/**
 * A JSON object as the repository's documentation gives it: the first ```json block (README.md,
 * then docs/**) that contains `marker` (e.g. `"connector.class": "<class>"`). Found by what it
 * says, not by a heading, so that the text may move between pages.
 */
export function documentedJson(marker: string): Record<string, string> {
  const pages = ['README.md', ...markdownUnder('docs')];
  for (const page of pages) {
    for (const [, block] of readFileSync(resolve(page), 'utf8').matchAll(/```json\n([\s\S]*?)```/g)) {
      if (block.includes(marker)) return JSON.parse(block) as Record<string, string>;
    }
  }
  throw new Error(`no json block with ${marker} in ${pages.join(', ')}`);
}

function markdownUnder(dir: string): string[] {
  return readdirSync(resolve(dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(dir, f));
}

/** What Connect's REST API says of a connector (GET /connectors/{name}/status). */
export interface ConnectorStatus {
  connector: { state: string };
  tasks: Array<{ id: number; state: string; trace?: string }>;
}

/**
 * `connect-standalone` in a child process with a folder of its own (worker.properties, log4j
 * configuration, the offsets file): the worker's REST API on a free port, its output kept for
 * assertion messages. One worker can run many connectors.
 */
export class ConnectWorker {
  private constructor(
    private readonly tool: ToolProcess,
    /** Connect's REST API, e.g. http://127.0.0.1:41234. */
    readonly rest: string,
  ) {}

  /**
   * Starts a worker on `bootstrap` and waits until its REST API serves. Sink tasks commit their
   * consumer offsets every `offsetFlushMs` (Connect's default is 60 s: a test waits less).
   */
  static async start(build: KafkaConnectBuild, bootstrap: string, options: { offsetFlushMs?: number; timeoutMs?: number } = {}): Promise<ConnectWorker> {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-connect-'));
    writeFileSync(join(dir, 'worker.properties'), [
      `bootstrap.servers=${bootstrap}`,
      // The worker's defaults; the README's connector configuration sets its own.
      'key.converter=org.apache.kafka.connect.storage.StringConverter',
      'value.converter=org.apache.kafka.connect.storage.StringConverter',
      `offset.storage.file.filename=${join(dir, 'connect.offsets')}`,
      `offset.flush.interval.ms=${options.offsetFlushMs ?? 1000}`,
      `plugin.path=${build.plugins}`,
      // The plugins' ServiceLoader manifests, instead of scanning every class (KIP-898): faster.
      'plugin.discovery=service_load',
      'listeners=http://127.0.0.1:0',
      '',
    ].join('\n'));
    writeFileSync(join(dir, 'log4j.properties'), [
      'log4j.rootLogger=INFO, stdout',
      'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
      'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
      // The consumer's and producer's configuration dumps are long.
      'log4j.logger.org.apache.kafka.clients=WARN',
      '',
    ].join('\n'));
    const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
    const child = spawn(java, [
      // A small heap, the serial collector and the quick compiler: two cores shared with the
      // broker, Sluice and the tests.
      '-Xmx256m', '-Xms64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:-UsePerfData',
      `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
      '-cp', join(build.libs, '*'),
      'org.apache.kafka.connect.cli.ConnectStandalone', join(dir, 'worker.properties'),
    ], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    // All of it (about 100 KB a run): the tests read the connector's lines from it.
    const worker = new ToolProcess('the Connect worker', child, dir, 2_000_000);
    const listening = () => /REST server listening at (http:\/\/[^/\s]+)\//.exec(worker.output)?.[1];
    await worker.waitUntil(() => listening() !== undefined && worker.output.includes('Kafka Connect started'), options.timeoutMs ?? 60_000);
    return new ConnectWorker(worker, listening()!);
  }

  /** A call to Connect's REST API; its JSON answer (undefined when empty). */
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(this.rest + path, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
  }

  async status(connector: string): Promise<ConnectorStatus> {
    const res = await this.call('GET', `/connectors/${connector}/status`);
    if (res.status !== 200) throw new Error(`GET /connectors/${connector}/status: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json as ConnectorStatus;
  }

  /** Waits until the connector's one task is in `state` (RUNNING, FAILED), as its status says. */
  async waitFor(connector: string, state: string, timeoutMs = 30_000): Promise<ConnectorStatus> {
    const deadline = Date.now() + timeoutMs;
    let last: ConnectorStatus | string = 'no answer';
    for (;;) {
      const res = await this.call('GET', `/connectors/${connector}/status`);
      if (res.status === 200) {
        last = res.json as ConnectorStatus;
        if (last.tasks.length === 1 && last.tasks[0].state === state) return last;
      } else {
        last = `${res.status} ${JSON.stringify(res.json)}`;
      }
      if (Date.now() > deadline) throw new Error(`connector ${connector}'s task not ${state} in time: ${JSON.stringify(last)}\n${this.logs().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  logs(): string {
    return this.tool.output;
  }

  /** SIGTERM (the worker stops its tasks and commits their offsets), SIGKILL after `graceMs`; removes its folder. */
  stop(graceMs = 15_000): Promise<void> {
    return this.tool.stop(graceMs);
  }
}
