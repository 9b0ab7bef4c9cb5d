/**
 * The render sandbox: records whose mapping stopped the process (or a render worker) before are
 * mapped again only here, in a child process of their own, one at a time, before the service
 * maps them: a reprocess or a replay asks the sandbox which of them still end the process that
 * maps them, and those stay failures (parked in the job) while the others are mapped as usual.
 * So a record that stopped the process is never mapped in it again unless a process with the
 * same heap cap mapped it without dying; and a record parked only because a kill cut its
 * mapping short (an operator's SIGKILL) can be reprocessed without changing the sink.
 *
 * The child runs render-worker in its IPC mode with the render threads' heap cap
 * (`--max-old-space-size`); it gets no SLUICE_* settings (the master token is one). It is
 * started on demand, again after a death, and ended when the probe is done.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LoggedRecord } from '../../ports/event-log.js';
import type { ParkedRecord } from '../../pipeline/batch-render.js';
import { stoppedSandboxReason } from './inflight.js';
import type { RecordProber, RenderedRows, RenderJob } from './renderer.js';
import { pack, type RenderResponse } from './worker-renderer.js';
import type { LimitOptions } from '@sluice/jsonnet';

export interface RenderSandboxOptions {
  /** The child's heap cap in MB (the render threads' cap); none: V8's default. */
  heapLimitMb?: number;
  /** Limits of the child's template evaluations (the render threads'); none: the engine's own. */
  limits?: LimitOptions;
}

class SandboxDeath extends Error {}

function childEntry(): { path: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('../../wiring/render-worker.js', import.meta.url));
  if (existsSync(js)) return { path: js, execArgv: [] };
  // Sluice run from its sources (tests): the TypeScript entry through tsx, resolved from here.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { path: fileURLToPath(new URL('../../wiring/render-worker.ts', import.meta.url)), execArgv: ['--import', tsx] };
}

/** One child process, one request at a time. */
class SandboxChild {
  private readonly child: ChildProcess;
  private stderrTail = '';
  private waiting?: { resolve: (rows: RenderedRows[]) => void; reject: (err: Error) => void };

  constructor(options: RenderSandboxOptions) {
    const entry = childEntry();
    const heap = options.heapLimitMb ? [`--max-old-space-size=${options.heapLimitMb}`] : [];
    this.child = fork(entry.path, options.limits ? [JSON.stringify(options.limits)] : [], {
      execArgv: [...entry.execArgv, ...heap],
      env: Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('SLUICE_') && key !== 'NODE_OPTIONS')),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (text: string) => (this.stderrTail = (this.stderrTail + text).slice(-2000)));
    this.child.on('message', (response: RenderResponse) => {
      const w = this.waiting;
      this.waiting = undefined;
      if (response.results) w?.resolve(response.results);
      else w?.reject(new Error(`render sandbox: ${response.error ?? 'no result'}`));
    });
    this.child.on('error', (err) => {
      const w = this.waiting;
      this.waiting = undefined;
      w?.reject(new Error(`render sandbox: ${err.message}`));
    });
    this.child.on('exit', (code, signal) => {
      const w = this.waiting;
      this.waiting = undefined;
      w?.reject(new SandboxDeath(this.deathReason(code, signal)));
    });
  }

  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.child.send(pack(1, records, jobs));
    });
  }

  close(): void {
    this.child.kill('SIGKILL');
  }

  /** The exit, and the fatal error V8 printed if any (`FATAL ERROR: Reached heap limit ...`). */
  private deathReason(code: number | null, signal: NodeJS.Signals | null): string {
    const fatal = this.stderrTail.split('\n').find((l) => /fatal/i.test(l))?.replace(/^#\s*/, '').trim();
    return `${signal ? `killed by ${signal}` : `exit code ${code}`}${fatal ? `: ${fatal}` : ''}`;
  }
}

export class RenderSandbox implements RecordProber {
  constructor(private readonly options: RenderSandboxOptions = {}) {}

  async probe(records: readonly LoggedRecord[], job: RenderJob): Promise<ParkedRecord[]> {
    const parked: ParkedRecord[] = [];
    // Alone: no budget, no mark (nothing of this process is at stake), nothing parked already.
    const alone: RenderJob = {
      columns: job.columns,
      after: -Infinity,
      ...(job.filter ? { filter: job.filter } : {}),
      ...(job.allowedSignals ? { allowedSignals: job.allowedSignals } : {}),
    };
    let child: SandboxChild | undefined;
    try {
      for (const record of records) {
        child ??= new SandboxChild(this.options);
        try {
          await child.render([record], [alone]);
        } catch (err) {
          if (!(err instanceof SandboxDeath)) throw err;
          parked.push({ offset: record.offset, reason: stoppedSandboxReason(err.message) });
          child = undefined;
        }
      }
    } finally {
      child?.close();
    }
    return parked;
  }
}
