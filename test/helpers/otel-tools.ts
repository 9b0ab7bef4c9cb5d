/**
 * The OpenTelemetry Collector and telemetrygen, real clients nobody here wrote, for tests (and the
 * OTLP bench): `scripts/build-otel-tools.sh` builds them once from the Go module proxy into a
 * cache outside the repository. A cold build takes minutes, so the test run starts it in the
 * background as it begins (global-setup.ts, only when a file that needs the tools is in the run)
 * and the sequencer runs those files last (test/helpers/sequencer.ts): the build overlaps the
 * other files. The only reason to skip is a machine without Go (and without built tools).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { forgetProcess, noteProcess } from './leftovers.js';

export const BUILD_SCRIPT = resolve('scripts/build-otel-tools.sh');
/** The script's exit code when Go is not on PATH (and the tools were never built). */
export const EXIT_NO_GO = 3;
/** A cold build (about 4.5 min on 2 free cores) on a loaded machine, or a wait for another one. */
export const OTEL_TOOLS_TIMEOUT_MS = 20 * 60_000;
/** Test files that use the tools: the global setup starts the build early when the run has one. */
export const OTEL_TOOLS_TEST_FILES = /test\/integration\/otel-clients-[^/]*\.test\.ts$/;

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
  ensured ??= new Promise((res, rej) => {
    const started = Date.now();
    execFile('bash', [BUILD_SCRIPT], { timeout: OTEL_TOOLS_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      if (code === EXIT_NO_GO) {
        res({ skip: (stderr.trim().split('\n').pop() ?? 'Go is not on PATH').replace(/^\[build-otel-tools\] /, '') });
        return;
      }
      if (err) {
        rej(new Error(`scripts/build-otel-tools.sh failed (${String(code ?? err.message)}): ${stderr.slice(-3000)}`));
        return;
      }
      const dir = stdout.trim().split('\n').pop()!;
      if (Date.now() - started > 5000) process.stderr.write(`[otel-tools] ready after ${Math.round((Date.now() - started) / 1000)} s: ${dir}\n`);
      res({ tools: { collector: join(dir, 'bin', 'otelcol-sluice'), telemetrygen: join(dir, 'bin', 'telemetrygen') } });
    });
  });
  return ensured;
}

/**
 * Starts the build in the background without waiting (the global setup, when the run has a file
 * that needs it), at a low priority so that the tests beside it keep their pace. Returns a stop
 * function for the run's end (a build that is still running then is ended; the next run
 * takes its lock over and goes on from the Go caches).
 */
export function prebuildOtelTools(): () => void {
  const child = spawn('nice', ['-n', '10', 'bash', BUILD_SCRIPT], { stdio: ['ignore', 'ignore', 'pipe'], detached: false });
  let failed = '';
  child.stderr!.on('data', (d: Buffer) => (failed = (failed + d.toString()).slice(-2000)));
  child.on('error', () => undefined);
  child.on('exit', (code) => {
    if (code !== 0 && code !== EXIT_NO_GO && code !== null) process.stderr.write(`[otel-tools] the background build failed (${code}); the tests will say why: ${failed}\n`);
  });
  return () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
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
  private output = '';
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly dir: string,
  ) {
    noteProcess(child.pid);
    child.stdout!.on('data', (d) => (this.output = (this.output + d).slice(-50_000)));
    child.stderr!.on('data', (d) => (this.output = (this.output + d).slice(-50_000)));
    this.exited = new Promise((res) => child.on('exit', () => {
      forgetProcess(child.pid);
      res();
    }));
  }

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
    const collector = new CollectorProcess(child, dir);
    const deadline = Date.now() + timeoutMs;
    while (!collector.output.includes('Everything is ready')) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the Collector exited while starting: ${collector.output.slice(-4000)}`);
      if (Date.now() > deadline) {
        await collector.stop();
        throw new Error(`the Collector was not ready within ${timeoutMs} ms: ${collector.output.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return collector;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  logs(): string {
    return this.output;
  }

  /** SIGTERM (the Collector drains its batch processor and exporters), SIGKILL after `graceMs`; removes its folder. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
