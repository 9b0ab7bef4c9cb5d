/**
 * A long-running real client in a child process, for tests (the OpenTelemetry Collector, a Kafka
 * Connect worker): the end of its output kept for assertion messages, its pid noted for the
 * run's cleanup (leftovers.ts), a folder of its own (configuration, state) removed when it stops.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { forgetProcess, noteProcess } from './leftovers.js';

export class ToolProcess {
  private out = '';
  private readonly exited: Promise<void>;

  /** `name` says which tool in errors; `keep`: how many characters of its output are kept. */
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly dir: string,
    keep = 50_000,
  ) {
    noteProcess(child.pid);
    const append = (d: Buffer) => (this.out = (this.out + d.toString()).slice(-keep));
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    this.exited = new Promise((res) => child.on('exit', () => {
      forgetProcess(child.pid);
      res();
    }));
  }

  get output(): string {
    return this.out;
  }

  /**
   * Polls `ready` (usually a line of the output) until it holds; stops the process and throws
   * with the output's end when it exits first or `timeoutMs` passes.
   */
  async waitUntil(ready: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`${this.name} exited while starting: ${this.out.slice(-4000)}`);
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`${this.name} was not ready within ${timeoutMs} ms: ${this.out.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGTERM (the tool drains or commits what it holds), SIGKILL after `graceMs`; removes its folder. */
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
