/**
 * A byte budget shared by concurrent requests: what is being inflated, decoded, flattened or
 * waits for its durable write. Beyond it a request is refused (429 with Retry-After) rather
 * than letting memory grow with the number of clients.
 */
export class InflightBudget {
  private used = 0;

  constructor(readonly capacity: number) {}

  /**
   * Takes `bytes` more for a request that already holds `held`, if they fit. A request larger
   * than the whole budget still passes when nothing else is in flight (it is within the body
   * limit, and refusing it would refuse it forever).
   */
  tryReserve(bytes: number, held = 0): boolean {
    const others = this.used - held;
    if (others > 0 && this.used + bytes > this.capacity) return false;
    this.used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  get inUse(): number {
    return this.used;
  }
}
