import { Subject, concatMap, defer, type Subscription } from 'rxjs';
import type { Logger } from '../logger.js';

/**
 * An actor (DESIGN.md "Actors"): a typed inbox (an RxJS Subject), one processing pipeline that
 * handles messages strictly one at a time, explicit state in the subclass, and a stop() that
 * drains. A message whose handling throws fails the actor: the supervisor policy here restarts
 * it with exponential backoff (restart() re-establishes the state from durable storage) and
 * handles the same message again, so a transient failure never drops work.
 */
export abstract class Actor<M> {
  private readonly inbox = new Subject<M>();
  private readonly subscription: Subscription;
  private readonly drained: Promise<void>;
  private stopped = false;
  protected failures = 0;

  constructor(
    readonly name: string,
    protected readonly log: Logger,
    private readonly backoff = { initialMs: 100, maxMs: 30_000 },
  ) {
    let resolve!: () => void;
    this.drained = new Promise((r) => (resolve = r));
    this.subscription = this.inbox
      .pipe(concatMap((message) => defer(() => this.supervise(message))))
      .subscribe({ complete: resolve, error: resolve });
  }

  /** Queues a message; ignored once the actor is stopping. */
  send(message: M): void {
    if (!this.stopped) this.inbox.next(message);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Stops taking messages and resolves when the queued ones are handled. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.inbox.complete();
    }
    await this.drained;
  }

  /** Handles one message; the next waits until the returned promise settles. */
  protected abstract handle(message: M): Promise<void>;

  /** Re-establishes state after a failure (e.g. reopen files at their committed length). */
  protected async restart(): Promise<void> {}

  private async supervise(message: M): Promise<void> {
    for (;;) {
      try {
        await this.handle(message);
        this.failures = 0;
        return;
      } catch (err) {
        this.failures++;
        const delay = Math.min(this.backoff.initialMs * 2 ** (this.failures - 1), this.backoff.maxMs);
        this.log.error({ err, actor: this.name, attempt: this.failures, retryInMs: delay }, 'actor failed; restarting');
        await new Promise((r) => setTimeout(r, delay));
        if (this.stopped && this.failures > 3) {
          this.log.error({ actor: this.name }, 'actor gave up while stopping');
          return;
        }
        try {
          await this.restart();
        } catch (restartErr) {
          this.log.error({ err: restartErr, actor: this.name }, 'actor restart failed');
        }
      }
    }
  }

  /** For tests and diagnostics. */
  dispose(): void {
    this.subscription.unsubscribe();
  }
}
