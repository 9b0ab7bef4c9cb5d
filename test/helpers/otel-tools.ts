/**
 * The OpenTelemetry Collector and telemetrygen, real clients nobody here wrote, for tests (and the
 * OTLP bench): `scripts/build-otel-tools.sh` builds them once from the Go module proxy into a
 * cache outside the repository. A cold build takes minutes, so the test run starts it in the
 * background as it begins (global-setup.ts, only when a file that needs the tools is in the run)
 * and the sequencer runs those files last (test/helpers/sequencer.ts): the build overlaps the
 * other files. The only reason to skip is a machine without Go (and without built tools).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runBuildScript, startBuildInBackground, type BuildScript } from './build-scripts.js';
import { forgetProcess, noteProcess } from './leftovers.js';
import { ToolProcess } from './tool-process.js';

export const BUILD_SCRIPT = resolve('scripts/build-otel-tools.sh');
/** The script's exit code when Go is not on PATH (and the tools were never built). */
export const EXIT_NO_GO = 3;
/** A cold build (about 4.5 min on 2 free cores) on a loaded machine, or a wait for another one. */
export const OTEL_TOOLS_TIMEOUT_MS = 20 * 60_000;
/** Test files that use the tools: the global setup starts the build early when the run has one. */
export const OTEL_TOOLS_TEST_FILES = /test\/integration\/otel-clients-[^/]*\.test\.ts$/;

const BUILD: BuildScript = { script: BUILD_SCRIPT, label: 'otel-tools', exitNoToolchain: EXIT_NO_GO, timeoutMs: OTEL_TOOLS_TIMEOUT_MS };

export interface OtelTools {
  /** The Collector (otlp receiver; batch; otlp, otlp_http, file, debug, nop exporters). */
  collector: string;
  telemetrygen: string;
}

export type OtelToolsAnswer = { tools: OtelTools } | { skip: string };

let ensured: Promise<OtelToolsAnswer> | undefined;

/**
 * The tools' paths, building them first when needed (once per process; parallel callers in
 * other processes wait on the script's lock), or the reason to skip: Go is not on PATH. A failed
 * build throws: it is a failure, not a skip.
 */
export function ensureOtelTools(): Promise<OtelToolsAnswer> {
  ensured ??= runBuildScript(BUILD).then((built) =>
    'skip' in built ? built : { tools: { collector: join(built.dir, 'bin', 'otelcol-sluice'), telemetrygen: join(built.dir, 'bin', 'telemetrygen') } },
  );
  return ensured;
}

/**
 * Starts the build in the background without waiting (the global setup, when the run has a file
 * that needs it). Returns a stop function for the run's end.
 */
export function prebuildOtelTools(): () => void {
  return startBuildInBackground(BUILD);
}

/** A line for the run's output, once per file, when the tools' tests are skipped. */
export function noteSkipped(file: string, reason: string): void {
  process.stderr.write(`[otel-tools] skipping ${file}: ${reason}\n`);
}

// ---------------------------------------------------------------------------------------------
// Running the tools.

export interface Finished {
  code: number | null;
  output: string;
}

/** A telemetrygen process: its pid (for /proc readings) and its end. */
export interface TelemetrygenProcess {
  pid: number;
  done: Promise<Finished>;
}

/** Starts telemetrygen (it stops after `--logs/--traces/--metrics` items per worker or `--duration`); killed after `timeoutMs`. */
export function startTelemetrygen(tools: OtelTools, args: string[], timeoutMs = 60_000): TelemetrygenProcess {
  const child = spawn(tools.telemetrygen, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  noteProcess(child.pid);
  let output = '';
  child.stdout!.on('data', (d) => (output = (output + d).slice(-20_000)));
  child.stderr!.on('data', (d) => (output = (output + d).slice(-20_000)));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const done = new Promise<Finished>((res, rej) => {
    child.on('error', rej);
    child.on('exit', (code) => {
      clearTimeout(timer);
      forgetProcess(child.pid);
      res({ code, output });
    });
  });
  return { pid: child.pid ?? 0, done };
}

/** Runs telemetrygen to its end. */
export function runTelemetrygen(tools: OtelTools, args: string[], timeoutMs = 60_000): Promise<Finished> {
  return startTelemetrygen(tools, args, timeoutMs).done;
}

/** A Collector in a child process, with its configuration in a folder of its own. */
export class CollectorProcess {
  private constructor(private readonly tool: ToolProcess) {}

  /**
   * Starts the Collector with `configs` (YAML text, or objects written as JSON, which its YAML
   * provider reads; the Collector merges them in order: maps deeply, a later list replaces an
   * earlier one) and `env` (the configs' `${env:NAME}` references), and waits until it says it
   * is ready.
   */
  static async start(tools: OtelTools, configs: Array<string | object>, env: Record<string, string> = {}, timeoutMs = 30_000): Promise<CollectorProcess> {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-otelcol-'));
    const args = configs.flatMap((config, i) => {
      const file = join(dir, `config-${i}.yaml`);
      writeFileSync(file, typeof config === 'string' ? config : JSON.stringify(config, null, 2));
      return ['--config', file];
    });
    const child = spawn(tools.collector, args, { env: { PATH: process.env.PATH ?? '', HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const collector = new ToolProcess('the Collector', child, dir);
    await collector.waitUntil(() => collector.output.includes('Everything is ready'), timeoutMs);
    return new CollectorProcess(collector);
  }

  get dir(): string {
    return this.tool.dir;
  }

  get pid(): number {
    return this.tool.child.pid ?? 0;
  }

  logs(): string {
    return this.tool.output;
  }

  /** SIGTERM (the Collector drains its batch processor and exporters), SIGKILL after `graceMs`; removes its folder. */
  stop(graceMs = 15_000): Promise<void> {
    return this.tool.stop(graceMs);
  }
}
