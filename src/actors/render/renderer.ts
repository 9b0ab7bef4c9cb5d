/**
 * RecordRenderer: how the sink actors turn a micro-batch of logged records into CSV rows, one
 * text per sink. The service renders on a worker thread (WorkerRenderer), so that mapping and
 * CSV encoding do not compete with ingestion for the event loop; InThreadRenderer does the same
 * work in place (unit tests, and anything without a thread to spare).
 */
import type { LoggedRecord } from '../../connectors/event-log/event-log.js';
import { BatchRenderer, type RenderedRows, type RenderJob } from '../../pipeline/batch-render.js';
import type { TemplateEngine } from '../../pipeline/template-engine.js';

export type { RenderedRows, RenderJob } from '../../pipeline/batch-render.js';

export interface RecordRenderer {
  /** One result per job, in order; rejects only when rendering itself broke (not for records that fail their mapping). */
  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]>;
  close(): Promise<void>;
}

export class InThreadRenderer implements RecordRenderer {
  private readonly batch: BatchRenderer;

  constructor(engine: TemplateEngine) {
    this.batch = new BatchRenderer(engine);
  }

  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    return this.batch.render(records, jobs);
  }

  async close(): Promise<void> {}
}
