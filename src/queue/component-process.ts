/**
 * Runs one component in its own Node process (never on the API's event loop): a component that
 * blocks, leaks or crashes cannot stall the API, and killing a job kills its process.
 *
 * The child is `component-child.js` next to this file when running from dist/, else the
 * TypeScript source through tsx (vitest, tsx): both resolve the registry's modules the same way.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildMessage, ParentMessage } from './component-protocol.js';

/** After an abort the component gets this long to stop by itself, then SIGKILL. */
const KILL_GRACE_MS = 2_000;

export type ComponentOutcome =
  | { kind: 'done'; message?: string; counters?: { pages?: number; items?: number } }
  | { kind: 'failed'; errorType: 'user' | 'application'; message: string; detail?: string }
  | { kind: 'killed' };

export interface ComponentRun {
  componentId: string;
  dataDir: string;
  /** The resolved configuration, `#` values decrypted: handed over IPC only. */
  config: Record<string, unknown>;
  /** The state of the previous run, `#` values decrypted: handed over IPC only. */
  state: Record<string, unknown>;
  signal: AbortSignal;
  onLog: (message: string, level: 'info' | 'warning' | 'error') => void;
}

function childEntry(): { path: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./component-child.js', import.meta.url));
  if (existsSync(js)) return { path: js, execArgv: [] };
  // tsx is resolved from here: the child may start in any working directory.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { path: fileURLToPath(new URL('./component-child.ts', import.meta.url)), execArgv: ['--import', tsx] };
}

/**
 * The environment a component sees: the service's, without its own settings (SLUICE_*, which
 * include the master token). Components run user configurations; they get no credentials.
 */
function componentEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SLUICE_')));
}

export function runComponentProcess(run: ComponentRun): Promise<ComponentOutcome> {
  return new Promise((resolve) => {
    const entry = childEntry();
    let child: ChildProcess;
    try {
      child = fork(entry.path, [], {
        execArgv: entry.execArgv,
        cwd: run.dataDir,
        env: componentEnv(),
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        serialization: 'json',
      });
    } catch (err) {
      resolve({ kind: 'failed', errorType: 'application', message: `The component process could not start: ${(err as Error).message}` });
      return;
    }
    let outcome: ComponentOutcome | undefined;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    let stderrTail = '';

    const send = (msg: ParentMessage) => {
      if (child.connected) child.send(msg, (err) => void err);
    };
    const onAbort = () => {
      aborted = true;
      send({ type: 'abort' });
      killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    };

    // What a component prints goes to the job log as well, line by line.
    child.stdout?.setEncoding('utf8');
    let stdoutBuf = '';
    child.stdout?.on('data', (text: string) => {
      stdoutBuf += text;
      const lines = stdoutBuf.split('\n');
      stdoutBuf = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') run.onLog(line, 'info');
      // Output without newlines must not grow without bound.
      if (stdoutBuf.length > 64 * 1024) {
        run.onLog(stdoutBuf, 'info');
        stdoutBuf = '';
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      stderrTail = (stderrTail + text).slice(-4000);
    });

    child.on('message', (msg: ChildMessage) => {
      if (msg.type === 'log') run.onLog(msg.message, msg.level);
      else if (msg.type === 'done') outcome ??= { kind: 'done', message: msg.message, counters: msg.counters };
      else if (msg.type === 'failed') {
        outcome ??= { kind: 'failed', errorType: msg.kind, message: msg.message, detail: msg.stack };
      }
    });
    child.on('error', (err) => {
      outcome ??= { kind: 'failed', errorType: 'application', message: `The component process failed: ${err.message}` };
    });
    child.on('exit', (code, signal) => {
      clearTimeout(killTimer);
      run.signal.removeEventListener('abort', onAbort);
      if (stdoutBuf.trim() !== '') run.onLog(stdoutBuf, 'info');
      // A component that finished before the kill reached it still counts as finished.
      if (aborted && outcome?.kind !== 'done') return resolve({ kind: 'killed' });
      resolve(outcome ?? {
        kind: 'failed',
        errorType: 'application',
        message: `The component process exited unexpectedly (${signal ?? `exit code ${code}`}).`,
        detail: stderrTail.trim() || undefined,
      });
    });

    if (run.signal.aborted) onAbort();
    else run.signal.addEventListener('abort', onAbort, { once: true });
    send({ type: 'run', componentId: run.componentId, dataDir: run.dataDir, config: run.config, state: run.state });
  });
}
