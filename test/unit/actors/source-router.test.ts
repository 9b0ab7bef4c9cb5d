/**
 * The source router and a slow sink (src/actors/source-router.ts): a sink whose mapping ran
 * out of its render budget in the group's pass is left behind and renders apart until it has
 * caught up, while the group reads on; each sink's rows are delivered once.
 */
import { describe, expect, it } from 'vitest';
import type { LoggedRecord } from '../../../src/ports/event-log.js';
import { SourceRouter, type RouterTarget, type TargetJob } from '../../../src/actors/source-router.js';
import type { RecordRenderer, RenderedRows, RenderJob, RenderLane } from '../../../src/actors/render/renderer.js';
import { createLogger } from '../../../src/logger.js';
import { sleep } from '../../helpers/child-service.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';

const TOPIC = 'topic';

/** A writer as the router sees it: commits through the last record rendered (a cut batch up to its cut), and keeps what it got. */
function target(sinkId: string): RouterTarget & { delivered: number[] } {
  const t = {
    sinkId,
    committedOffset: 0,
    delivered: [] as number[],
    prepare: async (): Promise<TargetJob> => ({ columns: [], after: t.committedOffset, file: 'f', owner: { branchId: 1, sourceId: 's', sinkId, mode: 'stream' }, budgetMs: 5 }),
    deliver: async (batch: readonly LoggedRecord[], rendered: RenderedRows, job: TargetJob, through: number) => {
      const upTo = rendered.cutAt === undefined ? through : rendered.cutAt > 0 ? batch[rendered.cutAt - 1].offset : t.committedOffset;
      for (const r of batch) if (r.offset > job.after && r.offset <= upTo) t.delivered.push(r.offset);
      t.committedOffset = Math.max(t.committedOffset, upTo);
    },
  };
  return t;
}

/** Renders every job whole, except the slow sink's: one record a call (its budget always runs out). */
class PacedRenderer implements RecordRenderer {
  readonly calls: Array<{ lane: RenderLane; sinks: string[] }> = [];

  async render(records: readonly LoggedRecord[], jobs: readonly RenderJob[], lane: RenderLane = 'shared'): Promise<RenderedRows[]> {
    this.calls.push({ lane, sinks: jobs.map((j) => j.owner!.sinkId) });
    await sleep(1);
    return jobs.map((job) => {
      const chosen = records.map((r, i) => ({ r, i })).filter(({ r }) => r.offset > job.after);
      const first = chosen[0]?.i ?? -1;
      const slow = job.owner!.sinkId === 'slow' && chosen.length > 1;
      return { csv: new Uint8Array(0), count: slow ? 1 : chosen.length, firstIndex: first, lastIndex: slow ? first : (chosen.at(-1)?.i ?? -1), failures: [], ...(slow ? { cutAt: chosen[1].i } : {}) };
    });
  }

  async close(): Promise<void> {}
}

describe('SourceRouter', () => {
  it('leaves a sink whose mapping ran out of its budget behind: it renders apart until it caught up, while the others go on', async () => {
    const log = new MemoryEventLog();
    const renderer = new PacedRenderer();
    const router = new SourceRouter(TOPIC, 's', log, renderer, createLogger('silent'));
    const quick = target('quick');
    const slow = target('slow');
    router.addTarget(quick);
    router.addTarget(slow);
    log.append(TOPIC, Array.from({ length: 20 }, (_, i) => ({ receivedAt: new Date(), ip: '1.1.1.1', headers: {}, body: Buffer.from(String(i)), signal: '' })));
    await sleep(5);
    router.pump();

    const deadline = Date.now() + 10_000;
    while ((quick.committedOffset < 20 || slow.committedOffset < 20) && Date.now() < deadline) await sleep(5);
    await router.stop();

    const all = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(quick.delivered).toEqual(all);
    expect(slow.delivered).toEqual(all);
    // The group's pass rendered both once; then the slow sink was rendered apart only, one record a call.
    const shared = renderer.calls.filter((c) => c.lane === 'shared');
    expect(shared[0].sinks).toEqual(['quick', 'slow']);
    expect(shared.slice(1).every((c) => !c.sinks.includes('slow'))).toBe(true);
    const apart = renderer.calls.filter((c) => c.lane === 'apart');
    expect(apart.every((c) => c.sinks.join() === 'slow')).toBe(true);
    expect(apart.length).toBeGreaterThanOrEqual(19);
  });
});
