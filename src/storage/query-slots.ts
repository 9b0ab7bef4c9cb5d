/**
 * Slots for read-only SQL queries: at most `size` hold one at once, at most `queueSize` wait for
 * one, and each waits no longer than its own deadline (the wait is part of the query's time).
 * A slot is given back when the query's work has really ended, not when its caller was
 * answered, so that a query the database cannot stop at once still counts.
 */

/** No slot for this query: the queue was full, or no slot became free before its deadline. */
export class NoQuerySlotError extends Error {
  override name = 'NoQuerySlotError';

  constructor(readonly reason: 'full' | 'deadline') {
    super(reason === 'full' ? 'every SQL connection is busy and the queue is full' : 'no SQL connection became free before the deadline');
  }
}

interface Waiter {
  grant(release: () => void): void;
  timer: NodeJS.Timeout;
}

export class QuerySlots {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly size: number,
    readonly queueSize: number,
  ) {}

  /** Queries holding a slot now. */
  get busy(): number {
    return this.running;
  }

  /** Queries waiting for a slot now. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * A slot, as the function that gives it back (once; later calls do nothing). Rejects with
   * NoQuerySlotError when `queueSize` queries wait already, or when `deadline` (epoch ms)
   * passes before a slot is free.
   */
  acquire(deadline: number): Promise<() => void> {
    if (this.running < this.size) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.queueSize) return Promise.reject(new NoQuerySlotError('full'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: (release) => {
          clearTimeout(waiter.timer);
          resolve(release);
        },
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(new NoQuerySlotError('deadline'));
        }, Math.max(0, deadline - Date.now())),
      };
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the first waiter, so a newcomer cannot take it in between.
      const next = this.waiting.shift();
      if (next) next.grant(this.releaser());
      else this.running--;
    };
  }
}
