/**
 * A token bucket of one quota (a source's records or bytes a second on this node): it holds up
 * to `capacity` tokens, fills at `rate` tokens a second, and a request takes one token per unit.
 *
 * Written here rather than taken from a library, because what the quotas need is what the
 * common ones lack: `limiter` (the most used) starts empty, refuses a request larger than the
 * bucket for ever, offers no "how long until n fit" for Retry-After, and checks one bucket at a
 * time, whereas a request must pass its records and its bytes buckets together or take from
 * neither; `rate-limiter-flexible` counts fixed windows. The arithmetic is a few lines; the
 * tests (test/unit/sources/token-bucket.test.ts) pin it.
 *
 * - A new bucket is full: a source's first second may use its whole burst.
 * - A request larger than the bucket is taken when the bucket is full, and leaves it in debt
 *   (below zero): the source then waits until the bucket has refilled past zero and up to the
 *   next request's need, so the long-run rate still holds and the large request is never
 *   refused for ever.
 * - A change of rate or capacity keeps how full the bucket is (its level as a share of its
 *   size, a debt too): a raised quota applies at once (an empty bucket of 1 a second holds a
 *   few tokens of 100 000 a second a moment later), a lowered one hands a throttled source no
 *   fresh burst.
 *
 * Times are milliseconds of a monotonic clock (performance.now()), given by the caller.
 */
export class TokenBucket {
  private level: number;
  private at: number;

  constructor(
    private rate: number,
    private capacity: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }

  get perSecond(): number {
    return this.rate;
  }

  get size(): number {
    return this.capacity;
  }

  /** Milliseconds until `n` tokens can be taken (0: now); a request larger than the bucket waits for a full bucket. */
  waitMs(n: number, now: number): number {
    this.refill(now);
    const need = Math.min(n, this.capacity);
    return this.level >= need ? 0 : Math.ceil(((need - this.level) * 1000) / this.rate);
  }

  /** Takes `n` tokens (the caller asked waitMs first); the level may go below zero (debt). */
  take(n: number, now: number): void {
    this.refill(now);
    this.level -= n;
  }

  /** Whole tokens left now (0 in debt). */
  remaining(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.level));
  }

  /** Milliseconds until the bucket is full again (0: full). */
  msUntilFull(now: number): number {
    this.refill(now);
    return this.level >= this.capacity ? 0 : Math.ceil(((this.capacity - this.level) * 1000) / this.rate);
  }

  /** A new rate and capacity from now on, the bucket as full (as a share of its size) as it was. */
  reconfigure(rate: number, capacity: number, now: number): void {
    this.refill(now);
    this.level = (this.level / this.capacity) * capacity;
    this.rate = rate;
    this.capacity = capacity;
  }

  private refill(now: number): void {
    if (now <= this.at) return;
    this.level = Math.min(this.capacity, this.level + ((now - this.at) * this.rate) / 1000);
    this.at = now;
  }
}
