/**
 * RecordRenderer: how the sink actors turn a micro-batch of logged records into CSV rows, one
 * text per sink. The service renders on worker threads (WorkerRenderer), so that mapping and
 * CSV encoding do not compete with ingestion for the event loop; InThreadRenderer does the same
 * work in place (`--render-thread off`, unit tests).
 */
import type { LoggedRecord } from '../../ports/event-log.js';
import { BatchRenderer, type ParkedRecord, type RenderedRows, type RenderGuard, type RenderJob } from '../../pipeline/batch-render.js';
import type { TemplateEngine } from '../../pipeline/template-engine.js';

export type { RenderedRows, RenderJob } from '../../pipeline/batch-render.js';

/**
 * Which queue a render waits in: `shared` for the rows the source routers render for the
 * sinks that keep up, `apart` for a sink that renders on its own (one that was slow or failing
 * and catches up, replays and reprocessing), so that a slow sink's work never waits in front
 * of the others'. A renderer with one thread (in place) has one queue.
 */
export type RenderLane = 'shared' | 'apart';

export interface RecordRenderer {
  /** One result per job, in order; rejects only when rendering itself broke (not for records that fail their mapping). */
  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[], lane?: RenderLane): Promise<RenderedRows[]>;
  close(): Promise<void>;
}

/**
 * Maps records of a job one at a time where their death cannot reach the process (a child
 * process: sandbox.ts), and answers those whose mapping ended it, parked with the reason.
 */
export interface RecordProber {
  probe(records: readonly LoggedRecord[], job: RenderJob): Promise<ParkedRecord[]>;
}

export class InThreadRenderer implements RecordRenderer {
  private readonly batch: BatchRenderer;

  /** `slot`: where the records being mapped are marked (inflight.ts); none in tests that do not look. */
  constructor(engine: TemplateEngine, private readonly slot?: RenderGuard & { close(): void }) {
    this.batch = new BatchRenderer(engine, slot);
  }

  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    return this.batch.render(records, jobs);
  }

  async close(): Promise<void> {
    this.slot?.close();
  }
}
