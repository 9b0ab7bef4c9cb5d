/**
 * The components' typed events (actors/sink-writer/events.ts, actors/level-operator/events.ts,
 * actors/hand-over-events.ts): one emit writes the log line and updates the metric of one
 * happening together, with the messages, fields, levels, metric names and labels that
 * dashboards, alerts and tests read.
 */
import { pino } from 'pino';
import type { Logger } from '../../../src/logger.js';
import { describe, expect, it } from 'vitest';
import { SinkWriterEvents } from '../../../src/actors/sink-writer/events.js';
import { FailureLogLimiter } from '../../../src/actors/sink-writer/failure-log.js';
import { LevelOperatorEvents } from '../../../src/actors/level-operator/events.js';
import { HandOverEvents } from '../../../src/actors/hand-over-events.js';
import { Metrics } from '../../../src/observability/metrics.js';
import { metricValue } from '../../helpers/prometheus.js';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const WARN = 40;
const ERROR = 50;
const INFO = 30;

/** A logger whose lines are kept, and a registry of its own. */
function outlets(): { lines: Line[]; log: Logger; metrics: Metrics; scrape: () => Promise<string> } {
  const lines: Line[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  const metrics = new Metrics({ version: 'test', target: 'duckdb', eventLog: 'lmdb' }, { defaultMetrics: false });
  return { lines, log, metrics, scrape: async () => (await metrics.scrape()).body };
}

const SINK = { branchId: 1, sourceId: 'src', sinkId: 'snk' };

describe('the sink writer events', () => {
  it('a give-up writes its error line and counts the give-up, once per emit', async () => {
    const { lines, log, metrics, scrape } = outlets();
    const events = new SinkWriterEvents(log, metrics, SINK, new FailureLogLimiter());
    const retryAt = Date.parse('2030-01-01T00:00:30.000Z');

    events.gaveUp({ reason: 'disk full', committedOffset: 41, retryAt }, 5);

    expect(lines).toEqual([expect.objectContaining({
      level: ERROR, branchId: 1, reason: 'disk full', committedOffset: 41, retryAt: '2030-01-01T00:00:30.000Z', attempts: 5,
      msg: 'sink failing: its writes keep failing; the other sinks of its source go on without it, and it resumes from its own position once its writes work again',
    })]);
    expect(metricValue(await scrape(), 'sluice_sink_give_ups_total', { source: 'src', sink: 'snk', branch: '1' })).toBe(1);
  });

  it('a record not mapped is counted by reason kind every time, and logged as the failure log allows', async () => {
    const { lines, log, metrics, scrape } = outlets();
    let now = 0;
    const events = new SinkWriterEvents(log, metrics, SINK, new FailureLogLimiter({ windowMs: 1000, now: () => now }));
    const reason = 'Invalid value for column "id": path "id" not found in the body.';

    events.recordNotMapped({ offset: 7, reason }, { index: 0, reason, column: 'id', kind: 'notFound' });
    events.recordNotMapped({ offset: 8, reason }, undefined);
    expect(metricValue(await scrape(), 'sluice_sink_records_failed_total', { source: 'src', sink: 'snk', reason: 'path_not_found' })).toBe(2);
    // The first of the window is logged with where it is and why; the second is only counted ...
    expect(lines).toEqual([expect.objectContaining({ level: WARN, branchId: 1, offset: 7, column: 'id', reason })]);
    expect(lines[0].msg).toMatch(/^record not mapped, kept as a mapping failure/);

    // ... and said as a count once the window has ended.
    now = 1000;
    events.failureWindowChecked();
    expect(lines[1]).toEqual(expect.objectContaining({ level: WARN, branchId: 1, more: 1, msg: '1 more records not mapped within a minute, kept as mapping failures' }));
  });

  it('records mapped are counted, not logged', async () => {
    const { lines, log, metrics, scrape } = outlets();
    new SinkWriterEvents(log, metrics, SINK, new FailureLogLimiter()).recordsMapped(3);
    expect(metricValue(await scrape(), 'sluice_sink_records_mapped_total', { source: 'src', sink: 'snk' })).toBe(3);
    expect(lines).toEqual([]);
  });

  it('records filtered are counted, not logged', async () => {
    const { lines, log, metrics, scrape } = outlets();
    const events = new SinkWriterEvents(log, metrics, SINK, new FailureLogLimiter());
    events.recordsFiltered(2);
    events.recordsFiltered(0);
    events.recordsFiltered(5);
    expect(metricValue(await scrape(), 'sluice_sink_records_filtered_total', { source: 'src', sink: 'snk' })).toBe(7);
    expect(lines).toEqual([]);
  });

  it('a failed filter is its own reason kind', async () => {
    const { log, metrics, scrape } = outlets();
    const events = new SinkWriterEvents(log, metrics, SINK, new FailureLogLimiter());
    events.recordNotMapped({ offset: 1, reason: 'Filter returned 1, not true or false.' }, { index: 0, reason: 'Filter returned 1, not true or false.', kind: 'filter' });
    // A kept failure reprocessed without the renderer's kind is read by its reason.
    events.recordNotMapped({ offset: 2, reason: 'Filter failed: path "a" not found in the body.' }, undefined);
    expect(metricValue(await scrape(), 'sluice_sink_records_failed_total', { source: 'src', sink: 'snk', reason: 'filter' })).toBe(2);
  });
});

describe('the level operator events', () => {
  const file = { branchId: 1, sourceId: 'src', sinkId: 'snk#2', openedAt: '2030-01-01T00:00:00.000Z' };

  it('an import writes its line, counts its rows per table and times it, in one emit', async () => {
    const { lines, log, metrics, scrape } = outlets();
    new LevelOperatorEvents(log, metrics).fileImported(file, 'in.c-b.t', { inserted: 4, duplicate: false, skipped: false }, 0.02);

    expect(lines).toEqual([expect.objectContaining({ level: INFO, file, tableId: 'in.c-b.t', rows: 4, duplicate: false, skipped: false, msg: 'file imported' })]);
    const text = await scrape();
    expect(metricValue(text, 'sluice_table_rows_imported_total', { table: 'in.c-b.t' })).toBe(4);
    expect(metricValue(text, 'sluice_import_duration_seconds_count')).toBe(1);
  });

  it('a failed import is counted per configured sink and logged with its retry', async () => {
    const { lines, log, metrics, scrape } = outlets();
    const retryAfter = new Date('2030-01-01T00:02:00.000Z');
    new LevelOperatorEvents(log, metrics).fileImportFailed(file, 'in.c-b.t', 'table missing', { attempt: 1, retryAfter });

    expect(lines).toEqual([expect.objectContaining({
      level: WARN, file, tableId: 'in.c-b.t', attempt: 1, retryAfter: retryAfter.toISOString(), reason: 'table missing',
      msg: 'file import failed; staged data kept, will retry',
    })]);
    // The instance's partition is not a label: the sink's partitions add up.
    expect(metricValue(await scrape(), 'sluice_imports_failed_total', { source: 'src', sink: 'snk' })).toBe(1);
  });

  it('a fencing refusal writes its line and counts the refusal', async () => {
    const { lines, log, metrics, scrape } = outlets();
    new LevelOperatorEvents(log, metrics).fileFenced(file, 'in.c-b.t', 'node-b');

    expect(lines).toEqual([expect.objectContaining({ level: WARN, file, tableId: 'in.c-b.t', claimedBy: 'node-b' })]);
    expect(lines[0].msg).toMatch(/^file not imported: another node took its sink over/);
    expect(metricValue(await scrape(), 'sluice_cluster_fencing_refusals_total')).toBe(1);
  });
});

describe('the hand-over events', () => {
  it('counts partitions taken and released, and logs a take-over without a release', async () => {
    const { lines, log, metrics, scrape } = outlets();
    const events = new HandOverEvents(log, metrics);
    events.taken();
    events.taken();
    events.released();
    events.releaseTimedOut('1.1.src/0', 'node-b', 20_000);
    const text = await scrape();
    expect(metricValue(text, 'sluice_cluster_handovers_total', { direction: 'taken' })).toBe(2);
    expect(metricValue(text, 'sluice_cluster_handovers_total', { direction: 'released' })).toBe(1);
    expect(lines).toEqual([expect.objectContaining({
      level: WARN, partitionId: '1.1.src/0', previous: 'node-b', waitedMs: 20_000,
      msg: 'hand-over: the previous owner did not release the partition in time; taking it up',
    })]);
  });
});
