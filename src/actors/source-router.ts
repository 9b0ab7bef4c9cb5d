import type { EventLog, LoggedRecord } from '../ports/event-log.js';
import type { Logger } from '../logger.js';
import { Actor } from './actor.js';
import type { BacklogGate } from './backlog-gate.js';
import type { RecordRenderer, RenderedRows, RenderJob, RenderLane } from './render/renderer.js';
import type { SinkFailing } from './sink-health.js';

/** A sink's render job for one batch, with the file it was asked for. */
export interface TargetJob extends RenderJob {
  /** Identity of the sink's open file (its opening time): rows rendered for another file are rendered again. */
  file: string;
}

/** What the router needs of a sink writer. */
export interface RouterTarget {
  readonly sinkId: string;
  /** Highest offset the writer has committed (records up to it are done). */
  readonly committedOffset: number;
  /** Opens the sink's file if needed, and says how the next batch is to be rendered for it. */
  prepare(): Promise<TargetJob>;
  /** Writes the rows rendered for `job` and commits `throughOffset`; resolves once committed. */
  deliver(batch: readonly LoggedRecord[], rendered: RenderedRows, job: TargetJob, throughOffset: number): Promise<void>;
  /**
   * Set while the sink is failing (its writer gave up after bounded retries, sink-health.ts):
   * the router leaves it out, and tries it again from its own position once `retryAt` is due.
   */
  readonly failing?: SinkFailing;
  /** The router took a failing target back: it opened its file again and has nothing left to catch up. */
  resumed?(): void;
}

type Message = { type: 'pump' };

/**
 * At most this many records one pass reads from the log (and BATCH_BYTES). A pass costs a few
 * event-loop turns whatever its size (log read, render thread, slice write, metadata commit),
 * and under ingestion load each turn waits behind the requests being decoded, so larger passes
 * let a sink keep up: under OTLP load on 2 cores, 1 000 a pass had mapped 40–54 thousand records
 * when a 10 s load stopped, 4 000 a pass 88–103 thousand. Much larger passes cost more CPU per
 * record (20 000: about 1.2× at a fixed rate: bigger objects outlive the young generation).
 */
const BATCH = 4000;
/**
 * At most this many bytes of records (in their log encoding) are rendered in one pass: a render
 * thread holds a batch's records and their parsed bodies at once, and its heap is capped
 * (`--render-heap-limit`), so a batch of large records is cut (at least one record a pass).
 */
const BATCH_BYTES = 16 * 1024 * 1024;
/** How long new records gather before the router reads them. */
const GATHER_MS = 25;

/**
 * One per source topic: reads each batch of the log once and has it rendered once for all of
 * its enabled sinks (one RecordRenderer call: each body parsed at most once and shared by every
 * sink, the rows of each sink only for the records it has not committed yet), then hands each
 * sink its rows. It waits for all sinks before reading on, so a slow sink holds the source back
 * instead of buffering without bound (the log keeps the records meanwhile).
 *
 * A failing sink (its writer gave up after bounded retries, sink-health.ts) does not: it is left
 * *behind* (out of the group the router reads for) at its own committed position, and the other
 * sinks go on. A slow sink does not either: each sink's mapping of a batch has a budget
 * (`--render-budget`); a sink whose mapping runs out of it writes what it rendered and is left
 * behind too, rendering apart (its own render thread, RenderLane `apart`) until it has caught up. When its retry is due it catches up on its own (catchUp: its records fetched
 * from the log from its position, rendered for it alone, off the group's pass, so a long catch-up
 * or a retry that fails again does not hold the others), and joins the group again once it has
 * reached it. Its records stay in the log meanwhile, as long as the log's retention keeps them.
 */
export class SourceRouter extends Actor<Message> {
  private readonly targets = new Map<string, RouterTarget>();
  /** Targets out of the group: failing, or catching up after a failure. */
  private readonly behind = new Set<string>();
  /** Targets with a catch-up running. */
  private readonly catchingUp = new Set<string>();
  /** Targets whose mapping ran out of its budget, until a pass renders a whole batch for them again (for the log). */
  private readonly slow = new Set<string>();
  private readonly unsubscribe: () => void;
  private pumpTimer?: NodeJS.Timeout;

  constructor(
    readonly topic: string,
    readonly sourceId: string,
    private readonly eventLog: EventLog,
    private readonly renderer: RecordRenderer,
    logger: Logger,
    /** Where the router says how far its sinks are behind (back-pressure on ingestion). */
    private readonly gate?: BacklogGate,
  ) {
    super(`router ${topic}`, logger);
    this.unsubscribe = eventLog.onDurable(topic, (head) => {
      this.reportBacklog(head);
      this.pumpSoon();
    });
  }

  addTarget(target: RouterTarget): void {
    this.targets.set(target.sinkId, target);
    this.pump();
  }

  removeTarget(sinkId: string): void {
    this.targets.delete(sinkId);
    this.behind.delete(sinkId);
    this.slow.delete(sinkId);
    this.reportBacklog();
  }

  get targetCount(): number {
    return this.targets.size;
  }

  pump(): void {
    this.send({ type: 'pump' });
  }

  /**
   * New records are picked up after a short gather delay rather than per log commit: sinks
   * then write and commit a few larger batches per second instead of one per commit, which
   * keeps their metadata commits off the ingestion path's back. Records wait for the table's
   * triggers (seconds) anyway.
   */
  private pumpSoon(): void {
    if (this.pumpTimer || this.isStopped) return;
    this.pumpTimer = setTimeout(() => {
      this.pumpTimer = undefined;
      this.pump();
    }, GATHER_MS);
  }

  override async stop(): Promise<void> {
    clearTimeout(this.pumpTimer);
    this.unsubscribe();
    await super.stop();
    this.gate?.report(this.topic, 0);
  }

  /**
   * How many records the group is behind the log's head: what ingestion is held back by
   * (backlog-gate.ts). Targets left behind (failing, or mapping slowly) do not count.
   */
  private reportBacklog(head = this.eventLog.headOffset(this.topic)): void {
    if (!this.gate) return;
    let slowest = Infinity;
    for (const t of this.targets.values()) if (!this.behind.has(t.sinkId) && t.committedOffset < slowest) slowest = t.committedOffset;
    this.gate.report(this.topic, slowest === Infinity ? 0 : Math.max(0, head - slowest));
  }

  protected async handle(): Promise<void> {
    for (;;) {
      this.followFailing();
      const targets = this.group();
      if (targets.length === 0) {
        this.reportBacklog();
        return; // no sink (or none working): records stay in the log
      }
      const from = Math.min(...targets.map((t) => t.committedOffset));
      const read = this.eventLog.read(this.topic, from, BATCH);
      if (read.length === 0) return;
      const batch = withinBytes(read);
      await this.fanOut(batch, targets);
      this.acknowledge();
      this.reportBacklog();
      // A target the pass left behind (slow) starts catching up now.
      this.followFailing();
      if (read.length < BATCH && batch.length === read.length) return;
    }
  }

  /** The targets the router reads for: every one not left behind. */
  private group(): RouterTarget[] {
    return [...this.targets.values()].filter((t) => !this.behind.has(t.sinkId));
  }

  /** Failing targets leave the group; those left behind whose retry is due start catching up. */
  private followFailing(): void {
    const now = Date.now();
    for (const target of this.targets.values()) {
      if (target.failing) this.behind.add(target.sinkId);
      if (!this.behind.has(target.sinkId) || this.catchingUp.has(target.sinkId) || this.isStopped) continue;
      if (target.failing && target.failing.retryAt > now) continue;
      this.catchingUp.add(target.sinkId);
      void this.catchUp(target).finally(() => this.catchingUp.delete(target.sinkId));
    }
  }

  /**
   * A target left behind, tried again: from its own committed position, batch by batch, until
   * it reaches the group (or the log's head); then it rejoins the group. A write that fails
   * again (its writer tries once while failing) ends the catch-up: the writer has set its next
   * retry. Records the log's retention removed meanwhile (by age, 7 days by default, or by the
   * topic's size) are gone for this sink: it goes on after them, and the log says how many.
   */
  private async catchUp(target: RouterTarget): Promise<void> {
    let retentionChecked = false;
    try {
      for (;;) {
        if (this.isStopped || this.targets.get(target.sinkId) !== target) return;
        const job = await target.prepare();
        if (!retentionChecked) {
          retentionChecked = true;
          const tail = this.eventLog.tailOffset(this.topic);
          if (tail > target.committedOffset + 1) {
            this.log.error(
              { sink: target.sinkId, committedOffset: target.committedOffset, tailOffset: tail, lost: tail - target.committedOffset - 1 },
              'the event log\'s retention removed records this sink had not written while it was failing: it goes on after them',
            );
          }
        }
        const group = this.group();
        const reached = group.length > 0 && target.committedOffset >= Math.min(...group.map((t) => t.committedOffset));
        const batch = reached ? [] : withinBytes(await this.eventLog.fetch(this.topic, target.committedOffset, BATCH));
        if (batch.length === 0) {
          // Caught up: back in the group (the next pass reads from its position too).
          target.resumed?.();
          this.behind.delete(target.sinkId);
          // A slow sink goes back and forth as long as it just keeps up: not a line each time.
          this.log[this.slow.has(target.sinkId) ? 'debug' : 'info']({ sink: target.sinkId, committedOffset: target.committedOffset }, 'sink caught up: the router reads for it again');
          this.pump();
          return;
        }
        const [rendered] = await this.renderEach(batch, [job], 'apart');
        await target.deliver(batch, rendered, job, batch[batch.length - 1].offset);
      }
    } catch (err) {
      // Still failing (its writer logged why and set the next retry), or stopped meanwhile.
      this.log.debug({ err, sink: target.sinkId }, 'catching up stopped; tried again when the sink\'s retry is due');
    }
  }

  /**
   * Tells the log how far the sinks have durably committed (a sink's offset moves only after
   * its metadata commit). Without cluster mode the position every sink has committed, failing
   * ones included, is acknowledged (Kafka group offset; in cluster mode the runtime moves it with
   * the imports). What is held for reading is released up to what the group has committed: a
   * failing sink does not hold it (nor pause a remote log's fetching); it reads its records again
   * with the log's random access (fetch) when it catches up. Sinks added meanwhile count too, so
   * that nothing they still need is let go.
   */
  private acknowledge(): void {
    const group = this.group();
    if (group.length === 0) return;
    const through = Math.min(...group.map((t) => t.committedOffset));
    const all = Math.min(...[...this.targets.values()].map((t) => t.committedOffset));
    if (!this.eventLog.coordinated) this.eventLog.acknowledge(this.topic, all);
    this.eventLog.release(this.topic, through);
  }

  /**
   * One batch for the group: prepared, rendered once for all, delivered to each. A target whose
   * writer gives up (it answers with a SinkFailingError after its bounded retries) is left
   * behind; the others' rows are delivered all the same.
   */
  private async fanOut(batch: LoggedRecord[], targets: RouterTarget[]): Promise<void> {
    const through = batch[batch.length - 1].offset;
    const live = targets.filter((t) => t.committedOffset < through);
    if (live.length === 0) return;
    const prepared = await Promise.allSettled(live.map((t) => t.prepare()));
    const ready: RouterTarget[] = [];
    const jobs: TargetJob[] = [];
    prepared.forEach((p, i) => {
      if (p.status === 'fulfilled') {
        ready.push(live[i]);
        jobs.push(p.value);
      } else {
        this.leftOut(live[i], p.reason);
      }
    });
    if (ready.length === 0) return;
    const rendered = await this.renderEach(batch, jobs);
    const delivered = await Promise.allSettled(ready.map((t, i) => t.deliver(batch, rendered[i], jobs[i], through)));
    delivered.forEach((d, i) => {
      if (d.status === 'rejected') this.leftOut(ready[i], d.reason);
      else this.followPace(ready[i], rendered[i]);
    });
  }

  /**
   * A target whose mapping ran out of its budget in the group's pass (it wrote what it
   * rendered) is left behind: it renders the rest apart, and the group reads on without waiting
   * for it. Logged when it becomes slow, and when a pass renders a whole batch for it again.
   */
  private followPace(target: RouterTarget, rendered: RenderedRows): void {
    if (rendered.cutAt === undefined) {
      if (this.slow.delete(target.sinkId)) this.log.info({ sink: target.sinkId }, 'sink keeps up again: its mapping renders whole batches within the render budget');
      return;
    }
    this.behind.add(target.sinkId);
    if (this.slow.has(target.sinkId)) return;
    this.slow.add(target.sinkId);
    this.log.warn(
      { sink: target.sinkId, committedOffset: target.committedOffset },
      'sink maps slowly: its mapping of a batch ran out of the render budget; it renders apart and catches up on its own, the other sinks of its source go on',
    );
  }

  /** A target that did not take the batch: left behind if its writer gave up (else it was stopped meanwhile). */
  private leftOut(target: RouterTarget, err: unknown): void {
    if (target.failing) {
      this.behind.add(target.sinkId);
      this.log.warn({ sink: target.sinkId, committedOffset: target.committedOffset, reason: target.failing.reason }, 'sink failing: the source goes on without it');
    } else {
      this.log.debug({ err, sink: target.sinkId }, 'sink did not take the batch');
    }
  }

  /**
   * The rows of every job, rendered in one call; if that call breaks, each job on its own, so
   * that a sink whose rendering breaks fails alone (its rows carry the error: its writer gives
   * up after its retries) and the others' rows are rendered.
   */
  private async renderEach(batch: LoggedRecord[], jobs: TargetJob[], lane: RenderLane = 'shared'): Promise<RenderedRows[]> {
    try {
      return await this.renderer.render(batch, jobs, lane);
    } catch {
      return Promise.all(jobs.map(async (job): Promise<RenderedRows> => {
        try {
          return (await this.renderer.render(batch, [job], lane))[0];
        } catch (err) {
          return { csv: new Uint8Array(0), count: 0, firstIndex: -1, lastIndex: -1, failures: [], error: `rendering failed: ${err instanceof Error ? err.message : String(err)}` };
        }
      }));
    }
  }
}

/** The first records of a batch within BATCH_BYTES (at least one). */
function withinBytes(batch: LoggedRecord[]): LoggedRecord[] {
  let bytes = 0;
  for (let i = 0; i < batch.length; i++) {
    bytes += batch[i].encoded?.length ?? batch[i].record.body.length;
    if (bytes > BATCH_BYTES && i > 0) return batch.slice(0, i);
  }
  return batch;
}
