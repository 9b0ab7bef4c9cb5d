import type { EventLog, LoggedRecord } from '../connectors/event-log/event-log.js';
import type { Logger } from '../logger.js';
import { Actor } from './actor.js';
import type { RecordRenderer, RenderedRows, RenderJob } from './render/renderer.js';

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
}

type Message = { type: 'pump' };

/** How many records one pass reads from the log. */
const BATCH = 1000;
/** How long new records gather before the router reads them. */
const GATHER_MS = 25;

/**
 * One per source topic: reads each batch of the log once and has it rendered once for all of
 * its enabled sinks (one RecordRenderer call: each body parsed at most once and shared by every
 * sink, the rows of each sink only for the records it has not committed yet), then hands each
 * sink its rows. It waits for all sinks before reading on, so a slow sink holds the source back
 * instead of buffering without bound (the log keeps the records meanwhile).
 */
export class SourceRouter extends Actor<Message> {
  private readonly targets = new Map<string, RouterTarget>();
  private readonly unsubscribe: () => void;
  private pumpTimer?: NodeJS.Timeout;

  constructor(
    readonly topic: string,
    readonly sourceId: string,
    private readonly eventLog: EventLog,
    private readonly renderer: RecordRenderer,
    logger: Logger,
  ) {
    super(`router ${topic}`, logger);
    this.unsubscribe = eventLog.onDurable(topic, () => this.pumpSoon());
  }

  addTarget(target: RouterTarget): void {
    this.targets.set(target.sinkId, target);
    this.pump();
  }

  removeTarget(sinkId: string): void {
    this.targets.delete(sinkId);
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
  }

  protected async handle(): Promise<void> {
    for (;;) {
      const targets = [...this.targets.values()];
      if (targets.length === 0) return; // no sink: records stay in the log until one is enabled
      const from = Math.min(...targets.map((t) => t.committedOffset));
      const batch = this.eventLog.read(this.topic, from, BATCH);
      if (batch.length === 0) return;
      await this.fanOut(batch, targets);
      this.acknowledge();
      if (batch.length < BATCH) return;
    }
  }

  /**
   * Tells the log how far every sink has durably committed (a sink's offset moves only after
   * its metadata commit): a remote log may let those records go from its buffers, and without
   * cluster mode records the position (Kafka group offset; in cluster mode the runtime moves it
   * with the imports). Sinks added meanwhile count too, so that nothing they still need is let go.
   */
  private acknowledge(): void {
    if (this.targets.size === 0) return;
    const through = Math.min(...[...this.targets.values()].map((t) => t.committedOffset));
    if (this.eventLog.coordinated) this.eventLog.release(this.topic, through);
    else this.eventLog.acknowledge(this.topic, through);
  }

  private async fanOut(batch: LoggedRecord[], targets: RouterTarget[]): Promise<void> {
    const through = batch[batch.length - 1].offset;
    const live = targets.filter((t) => t.committedOffset < through);
    if (live.length === 0) return;
    const jobs = await Promise.all(live.map((t) => t.prepare()));
    const rendered = await this.renderer.render(batch, jobs);
    await Promise.all(live.map((t, i) => t.deliver(batch, rendered[i], jobs[i], through)));
  }
}
