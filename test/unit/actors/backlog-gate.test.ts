/**
 * Back-pressure from the sinks to ingestion (src/actors/backlog-gate.ts): a source is refused
 * once its sinks are more than the limit behind, and takes records again within half of it; the
 * source router reports its group's backlog as records become durable and as its sinks commit,
 * leaving out a failing sink.
 */
import { describe, expect, it } from 'vitest';
import { BacklogGate } from '../../../src/actors/backlog-gate.js';
import { SourceRouter, type RouterTarget, type TargetJob } from '../../../src/actors/source-router.js';
import type { RecordRenderer, RenderedRows, RenderJob } from '../../../src/actors/render/renderer.js';
import type { LoggedRecord } from '../../../src/ports/event-log.js';
import { createLogger } from '../../../src/logger.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { sleep, until } from '../../helpers/child-service.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';

describe('BacklogGate', () => {
  it('refuses a topic beyond the limit and takes it again within half of it', () => {
    const lines: string[] = [];
    const gate = new BacklogGate(100, { warn: (_o: object, m: string) => lines.push(`warn ${m}`), info: (_o: object, m: string) => lines.push(`info ${m}`) } as never);
    gate.report('t', 100);
    expect(gate.refuses('t')).toBe(false);
    gate.report('t', 101);
    expect(gate.refuses('t')).toBe(true);
    gate.report('t', 60);
    expect(gate.refuses('t'), 'between half the limit and the limit: still refused').toBe(true);
    gate.report('t', 50);
    expect(gate.refuses('t')).toBe(false);
    expect(gate.refuses('other')).toBe(false);
    // One line when refusing starts and one when it ends, not one per report.
    gate.report('t', 500);
    gate.report('t', 600);
    gate.report('t', 0);
    expect(lines.map((l) => l.split(':')[0])).toEqual([
      'warn the sinks of a source are too far behind its records',
      'info the sinks of a source have caught up',
      'warn the sinks of a source are too far behind its records',
      'info the sinks of a source have caught up',
    ]);
  });

  it('refuses a topic while any of its partitions read here is behind', () => {
    const gate = new BacklogGate(10);
    gate.report('t#1', 50);
    gate.report('t', 0);
    expect(gate.refuses('t')).toBe(true);
    gate.report('t#2', 50);
    gate.report('t#1', 0);
    expect(gate.refuses('t')).toBe(true);
    gate.report('t#2', 5);
    expect(gate.refuses('t')).toBe(false);
  });

  it('never refuses with limit 0', () => {
    const gate = new BacklogGate(0);
    gate.report('t', 1e9);
    expect(gate.refuses('t')).toBe(false);
  });
});

/** A writer that takes a batch only when let go (`open`), and can be failing. */
function heldTarget(sinkId: string): RouterTarget & { open: boolean; failingNow: boolean } {
  const t = {
    sinkId,
    committedOffset: 0,
    open: false,
    failingNow: false,
    get failing() {
      return t.failingNow ? { reason: 'broken', since: new Date().toISOString(), retries: 0, retryAt: Date.now() + 3_600_000 } : undefined;
    },
    prepare: async (): Promise<TargetJob> => ({ columns: [], after: t.committedOffset, file: 'f' }),
    deliver: async (_batch: readonly LoggedRecord[], _rendered: RenderedRows, _job: TargetJob, through: number) => {
      while (!t.open) await sleep(2);
      t.committedOffset = Math.max(t.committedOffset, through);
    },
  };
  return t;
}

class WholeRenderer implements RecordRenderer {
  async render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    return jobs.map(() => ({ csv: new Uint8Array(0), count: records.length, firstIndex: 0, lastIndex: records.length - 1, failures: [] }));
  }

  async close(): Promise<void> {}
}

const records = (n: number): IngestRecord[] => Array.from({ length: n }, (_, i) => ({ receivedAt: new Date(), ip: '', headers: {}, body: Buffer.from(String(i)), signal: '' }));

describe('SourceRouter backlog reports', () => {
  it('refuses its topic while its sinks are behind, and takes records again once they caught up', async () => {
    const log = new MemoryEventLog();
    const gate = new BacklogGate(50);
    const router = new SourceRouter('topic', 's', log, new WholeRenderer(), createLogger('silent'), gate);
    const sink = heldTarget('a');
    router.addTarget(sink);
    await log.append('topic', records(40)).durable;
    await sleep(5);
    expect(gate.refuses('topic')).toBe(false);
    await log.append('topic', records(40)).durable;
    await until('the gate refuses', async () => (gate.refuses('topic') ? true : undefined), 2_000);
    sink.open = true;
    await until('the sink has every record', async () => (sink.committedOffset === 80 ? true : undefined), 2_000);
    expect(gate.refuses('topic')).toBe(false);
    await router.stop();
  });

  it('does not hold its topic back for a failing sink, and clears it when stopped', async () => {
    const log = new MemoryEventLog();
    const gate = new BacklogGate(50);
    const router = new SourceRouter('topic', 's', log, new WholeRenderer(), createLogger('silent'), gate);
    const broken = heldTarget('broken');
    broken.failingNow = true;
    const fine = heldTarget('fine');
    fine.open = true;
    router.addTarget(broken);
    router.addTarget(fine);
    await log.append('topic', records(200)).durable;
    await until('the working sink has every record', async () => (fine.committedOffset === 200 ? true : undefined), 2_000);
    expect(broken.committedOffset).toBe(0);
    expect(gate.refuses('topic')).toBe(false);

    const held = heldTarget('held');
    const router2 = new SourceRouter('other', 's', log, new WholeRenderer(), createLogger('silent'), gate);
    router2.addTarget(held);
    await log.append('other', records(100)).durable;
    await until('the gate refuses', async () => (gate.refuses('other') ? true : undefined), 2_000);
    held.open = true;
    await router2.stop();
    expect(gate.refuses('other'), 'a stopped router holds nothing back').toBe(false);
    await router.stop();
  });
});
