/**
 * The client side of the crash tests: several clients send events back to back; after the n-th
 * acknowledged event (one n per kill) the server is killed and started again, while the clients
 * wait. A client retries only a request that got no answer, so that afterwards a test can tell
 * an event doubled by its own retry from one the server doubled.
 */
import { sleep, tail, type ChildService, type SendResult } from './child-service.js';

export interface StreamWhileKillingOptions {
  service: ChildService;
  /** Ingestion path of the source. */
  path: string;
  /** The events' ids; each is sent as the body {"n": id}. */
  ids: string[];
  /** Acknowledged-event counts at which the server is killed, ascending. */
  killAt: number[];
  concurrency: number;
  /** Every event must be acknowledged within this long. */
  deadlineMs: number;
  /** SIGKILLs the server and starts it again; resolves with a description of the kill. */
  killAndRestart: () => Promise<Record<string, unknown>>;
}

export interface StreamWhileKillingResult {
  acked: Set<string>;
  /** How often each event was sent. */
  attempts: Map<string, number>;
  /** Events sent again after a request got no answer. */
  retried: Set<string>;
  /** Answers other than 200 (none are expected). */
  unexpected: string[];
  /** One entry per kill: acknowledged events at the kill, downtime, and what killAndRestart said. */
  kills: Array<{ acked: number; downMs: number } & Record<string, unknown>>;
}

export async function streamWhileKilling(opts: StreamWhileKillingOptions): Promise<StreamWhileKillingResult> {
  const { service, path, ids, killAt } = opts;
  const result: StreamWhileKillingResult = { acked: new Set(), attempts: new Map(), retried: new Set(), unexpected: [], kills: [] };
  const { acked, attempts, retried, unexpected, kills } = result;
  let killsStarted = 0;
  let up: Promise<void> = Promise.resolve();
  let cycle: Promise<void> = Promise.resolve();
  const deadline = Date.now() + opts.deadlineMs;

  /** Clients wait for `up` while the server is down. */
  const killAndRestart = (): void => {
    let open!: () => void;
    up = new Promise((r) => (open = r));
    cycle = (async () => {
      const at = acked.size;
      const t0 = Date.now();
      const detail = await opts.killAndRestart();
      kills.push({ acked: at, downMs: Date.now() - t0, ...detail });
      open();
    })();
    cycle.catch(() => open());
  };

  const deliver = async (id: string): Promise<void> => {
    let lastError = '';
    for (let attempt = 1; attempt <= 40; attempt++) {
      if (Date.now() > deadline) throw new Error(`event ${id}: no 200 before the deadline (last: ${lastError || 'none'})\n${tail(service.output())}`);
      await up;
      attempts.set(id, attempt);
      const res: SendResult = await service.send(path, JSON.stringify({ n: id }));
      if (res.answered && res.status === 200) {
        acked.add(id);
        if (killsStarted < killAt.length && acked.size >= killAt[killsStarted]) {
          killsStarted++;
          killAndRestart();
        }
        return;
      }
      if (res.answered) {
        // Any answer but 200 is a refusal the client did not expect here.
        unexpected.push(`${id}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
        return;
      }
      // No answer: the server may or may not have logged it; send it again (to the new process).
      retried.add(id);
      lastError = res.error;
      // Soon at first (the new process is up in a moment), then less often: about 30 s in all.
      await sleep(Math.min(20 * 2 ** (attempt - 1), 1000));
    }
    const state = service.running ? 'running' : 'not running';
    throw new Error(`event ${id}: no answer after 40 attempts (last: ${lastError}; the service is ${state})\n${tail(service.output())}`);
  };

  let next = 0;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (next < ids.length) await deliver(ids[next++]);
    }),
  );
  await cycle;
  return result;
}
