/**
 * The job runner's typed events (queue/events.ts): one emit writes the process log line and
 * updates the metrics of one happening together, with the names and labels dashboards read.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { JobRunnerEvents } from '../../../src/queue/events.js';
import { Metrics } from '../../../src/observability/metrics.js';
import { metricValue } from '../../helpers/prometheus.js';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function outlets(): { lines: Line[]; events: JobRunnerEvents; scrape: () => Promise<string> } {
  const lines: Line[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  const metrics = new Metrics({ version: 'test', target: 'duckdb', eventLog: 'lmdb' }, { defaultMetrics: false });
  return { lines, events: new JobRunnerEvents(log, metrics), scrape: async () => (await metrics.scrape()).body };
}

describe('the job runner events', () => {
  it('a finished job is counted by component and status, and its run time observed', async () => {
    const { lines, events, scrape } = outlets();
    events.finished('keboola.ex-generic-v2', 'success', 2_500);
    events.finished('keboola.ex-generic-v2', 'error', 500);
    const text = await scrape();
    expect(metricValue(text, 'sluice_jobs_total', { component: 'keboola.ex-generic-v2', status: 'success' })).toBe(1);
    expect(metricValue(text, 'sluice_jobs_total', { component: 'keboola.ex-generic-v2', status: 'error' })).toBe(1);
    expect(metricValue(text, 'sluice_job_duration_seconds_sum', { component: 'keboola.ex-generic-v2' })).toBe(3);
    expect(lines).toEqual([]);
  });

  it('an application error writes its error line with the id the answer shows', () => {
    const { lines, events } = outlets();
    events.applicationError('123', 'job-123-abc', new Error('boom'));
    expect(lines).toEqual([expect.objectContaining({ level: 50, jobId: '123', exceptionId: 'job-123-abc', msg: 'job failed with an application error' })]);
    expect((lines[0].err as { message: string }).message).toBe('boom');
  });

  it("the extractor's counters add up, and an absent counter adds nothing", async () => {
    const { events, scrape } = outlets();
    events.extracted({ pages: 3, items: 120 });
    events.extracted({ pages: 2 });
    events.extracted(undefined);
    const text = await scrape();
    expect(metricValue(text, 'sluice_extractor_pages_total', {})).toBe(5);
    expect(metricValue(text, 'sluice_extractor_items_total', {})).toBe(120);
  });
});
