import { Subject, concatMap, defer, type Subscription } from 'rxjs';
import type { Logger } from '../logger.js';

/**
 * An actor (docs/architecture.md "Actors"): a typed inbox (an RxJS Subject), one processing pipeline that
 * handles messages strictly one at a time, explicit state in the subclass, and a stop() that
 * drains. A message whose handling throws fails the actor: the supervisor policy here restarts
 * it with exponential backoff (restart() re-establishes the state from durable storage) and
 * handles the same message again, so a transient failure never drops work. An actor may bound
 * the attempts of a message (attemptsFor): after the last one it gives the message up
 * (giveUp, which must answer whoever waits for it) and takes the next, so that one message that
 * keeps failing does not hold the actor, and everyone waiting on it, forever.
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

  /** How many times a message is handled before it is given up; by default until it succeeds. */
  protected attemptsFor(_message: M): number {
    return Infinity;
  }

  /** Called instead of a further attempt once `attemptsFor(message)` attempts failed; then the next message is handled. */
  protected giveUp(_message: M, _err: unknown, _attempts: number): void | Promise<void> {}

  private async supervise(message: M): Promise<void> {
    for (;;) {
      try {
        await this.handle(message);
        this.failures = 0;
        return;
      } catch (err) {
        this.failures++;
        if (this.failures >= this.attemptsFor(message)) {
          await this.abandon(message, err);
          return;
        }
        const delay = Math.min(this.backoff.initialMs * 2 ** (this.failures - 1), this.backoff.maxMs);
        this.log.error({ err, actor: this.name, attempt: this.failures, retryInMs: delay }, 'actor failed; restarting');
        await new Promise((r) => setTimeout(r, delay));
        if (this.stopped && this.failures > 3) {
          this.log.error({ actor: this.name }, 'actor gave up while stopping');
          // Whoever waits for the message is answered (a bounded actor's giveUp does).
          await this.abandon(message, err);
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

  private async abandon(message: M, err: unknown): Promise<void> {
    const attempts = this.failures;
    this.failures = 0;
    try {
      await this.giveUp(message, err, attempts);
    } catch (giveUpErr) {
      this.log.error({ err: giveUpErr, actor: this.name }, 'actor could not give a message up');
    }
  }

  /** For tests and diagnostics. */
  dispose(): void {
    this.subscription.unsubscribe();
  }
}
