/**
 * The project's scripts that build real clients nobody here wrote, for tests (and benches):
 * scripts/build-otel-tools.sh (the OpenTelemetry Collector, telemetrygen) and
 * scripts/build-kafka-connect-http.sh (a Kafka Connect worker and an HTTP sink connector). Each
 * builds once into a cache outside the repository, waits on its own lock when another process
 * builds, prints the cached folder as its last line on stdout, and exits with a code of its own
 * when the machine lacks the toolchain: the one reason for a test to skip. A cold build takes
 * from seconds to minutes, so the test run starts the builds its files need in the background as
 * it begins (global-setup.ts) and the sequencer runs those files last (sequencer.ts).
 */
import { execFile, spawn } from 'node:child_process';

export interface BuildScript {
  /** Absolute path of the script. */
  script: string;
  /** Prefix of this build's lines in the run's output, e.g. `otel-tools`. */
  label: string;
  /** The script's exit code when the toolchain is missing (and nothing was built before). */
  exitNoToolchain: number;
  /** A cold build on a loaded machine, or a wait for another one. */
  timeoutMs: number;
}

/** The cached folder the script printed, or why the tests that need it skip. */
export type BuildAnswer = { dir: string } | { skip: string };

/**
 * Runs the script to its end (a cached build answers at once). A missing toolchain is a skip
 * with the script's own last line; a failed build throws: it is a failure, not a skip.
 */
export function runBuildScript(build: BuildScript): Promise<BuildAnswer> {
  return new Promise((res, rej) => {
    const started = Date.now();
    execFile('bash', [build.script], { timeout: build.timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      if (code === build.exitNoToolchain) {
        res({ skip: (stderr.trim().split('\n').pop() ?? 'the toolchain is missing').replace(/^\[[\w-]+\] /, '') });
        return;
      }
      if (err) {
        rej(new Error(`${build.script} failed (${String(code ?? err.message)}): ${stderr.slice(-3000)}`));
        return;
      }
      const dir = stdout.trim().split('\n').pop()!;
      if (Date.now() - started > 5000) process.stderr.write(`[${build.label}] ready after ${Math.round((Date.now() - started) / 1000)} s: ${dir}\n`);
      res({ dir });
    });
  });
}

/**
 * Starts the script in the background without waiting, at a low priority so that the tests
 * beside it keep their pace. Returns a stop function for the run's end (a build still running
 * then is ended; the next run takes its lock over and goes on from the caches).
 */
export function startBuildInBackground(build: BuildScript): () => void {
  const child = spawn('nice', ['-n', '10', 'bash', build.script], { stdio: ['ignore', 'ignore', 'pipe'], detached: false });
  let failed = '';
  child.stderr!.on('data', (d: Buffer) => (failed = (failed + d.toString()).slice(-2000)));
  child.on('error', () => undefined);
  child.on('exit', (code) => {
    if (code !== 0 && code !== build.exitNoToolchain && code !== null) {
      process.stderr.write(`[${build.label}] the background build failed (${code}); the tests will say why: ${failed}\n`);
    }
  });
  return () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
}
