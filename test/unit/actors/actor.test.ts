import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Actor } from '../../../src/actors/actor.js';

class Recorder extends Actor<number> {
  seen: number[] = [];
  restarts = 0;
  attempts = Infinity;
  givenUp: Array<[number, string, number]> = [];
  protected override attemptsFor(): number {
    return this.attempts;
  }
  protected override giveUp(n: number, err: unknown, attempts: number): void {
    this.givenUp.push([n, (err as Error).message, attempts]);
  }
  failOn = new Map<number, number>();
  protected async handle(n: number): Promise<void> {
    const left = this.failOn.get(n) ?? 0;
    if (left > 0) {
      this.failOn.set(n, left - 1);
      throw new Error(`fail ${n}`);
    }
    await new Promise((r) => setTimeout(r, 1));
    this.seen.push(n);
  }
  protected override async restart(): Promise<void> {
    this.restarts++;
  }
}

const log = pino({ level: 'silent' });

describe('Actor', () => {
  it('handles messages one at a time, in order, and drains on stop', async () => {
    const a = new Recorder('r', log);
    for (let i = 0; i < 20; i++) a.send(i);
    await a.stop();
    expect(a.seen).toEqual([...Array(20).keys()]);
    a.send(99);
    expect(a.seen).not.toContain(99);
  });

  it('restarts after a failure with backoff and retries the same message', async () => {
    const a = new Recorder('r', log, { initialMs: 1, maxMs: 5 });
    a.failOn.set(2, 3);
    [1, 2, 3].forEach((n) => a.send(n));
    await a.stop();
    expect(a.seen).toEqual([1, 2, 3]);
    expect(a.restarts).toBe(3);
  });

  it('gives a message up after its bounded attempts and handles the next ones', async () => {
    const a = new Recorder('r', log, { initialMs: 1, maxMs: 5 });
    a.attempts = 3;
    a.failOn.set(2, 100);
    [1, 2, 3].forEach((n) => a.send(n));
    await a.stop();
    expect(a.seen).toEqual([1, 3]);
    expect(a.givenUp).toEqual([[2, 'fail 2', 3]]);
    // Restarted between the attempts, not after the last one.
    expect(a.restarts).toBe(2);
  });
});
