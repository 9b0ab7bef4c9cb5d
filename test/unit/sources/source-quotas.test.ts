/**
 * The per-source quotas (src/sources/ingest/source-quotas.ts) over the SourceQuotas contract,
 * on clocks the test moves: the limits from the source's settings and the node's defaults,
 * the verdicts and their headers, all-or-nothing over records and bytes, a change of the
 * definition applied on the next request, the metrics' cells, the API's view, and idle entries
 * dropped.
 */
import { describe, expect, it } from 'vitest';
import { QuotaBuckets, RECENT_MS } from '../../../src/sources/ingest/source-quotas.js';
import { NO_QUOTA } from '../../../src/pipeline/quota-settings.js';
import type { Source } from '../../../src/model/definition.js';
import type { IngestTarget } from '../../../src/sources/ingest/sources.js';

function source(sourceId: string, config: Array<{ key: string; value: unknown }> = []): Source {
  return { sourceId, branchId: 1, projectId: 1, type: 'http', name: sourceId, description: '', secret: 's', config } as unknown as Source;
}
const target = (s: Source): IngestTarget => ({ source: s, enabledSinks: [] });
const records = (n: number) => [{ key: 'source.quota.recordsPerSecond', value: n }];

class Clocks {
  t = 1_000;
  wall = Date.UTC(2026, 0, 1);
  advance(ms: number): void {
    this.t += ms;
    this.wall += ms;
  }
}

function buckets(clocks: Clocks, defaults = NO_QUOTA) {
  const counted = new Map<string, { records: { value: number }; bytes: { value: number } }>();
  const quotas = new QuotaBuckets({
    defaults,
    now: () => clocks.t,
    wallClock: () => clocks.wall,
    counters: { cellsOf: (id) => counted.get(id) ?? (counted.set(id, { records: { value: 0 }, bytes: { value: 0 } }), counted.get(id)!) },
  });
  return { quotas, counted };
}

describe('per-source quotas', () => {
  it('lets a source without a quota pass with no headers, and keeps nothing for it', () => {
    const clocks = new Clocks();
    const { quotas, counted } = buckets(clocks);
    const free = target(source('free'));
    for (let i = 0; i < 1_000; i++) expect(quotas.take(free, 100, 1_000_000)).toEqual({ ok: true });
    expect(quotas.size).toBe(0);
    expect(counted.size).toBe(0);
    expect(quotas.quotaOf(free.source)).toBeUndefined();
  });

  it('refuses past the burst with the headers of the draft, then takes again once the bucket refilled', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    const limited = target(source('limited', records(10)));
    const first = quotas.take(limited, 4, 100);
    expect(first).toEqual({ ok: true, headers: { 'ratelimit-policy': '"records";q=10;w=1', ratelimit: '"records";r=6;t=1' } });
    expect(quotas.take(limited, 6, 100).ok).toBe(true);
    const refused = quotas.take(limited, 3, 100);
    expect(refused).toEqual({
      ok: false,
      limit: 'records',
      retryAfterMs: 300,
      headers: { 'retry-after': '1', 'ratelimit-policy': '"records";q=10;w=1', ratelimit: '"records";r=0;t=1' },
      message: 'The source "limited" is over its quota of 10 records a second on this node; retry after 1 s.',
    });
    // A refusal takes nothing: after 300 ms the same request fits.
    clocks.advance(299);
    expect(quotas.take(limited, 3, 100).ok).toBe(false);
    clocks.advance(1);
    expect(quotas.take(limited, 3, 100).ok).toBe(true);
  });

  it('refuses the whole request when either budget is short, and takes from neither', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    const both = target(source('both', [...records(100), { key: 'source.quota.bytesPerSecond', value: '1KB' }]));
    const ok = quotas.take(both, 10, 1_000);
    expect(ok.ok && ok.headers).toEqual({
      'ratelimit-policy': '"records";q=100;w=1, "bytes";q=1024;qu="content-bytes";w=1',
      ratelimit: '"records";r=90;t=1, "bytes";r=24;t=1',
    });
    const refused = quotas.take(both, 10, 500);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.limit).toBe('bytes');
    expect(refused.retryAfterMs).toBe(465);
    expect(refused.message).toBe('The source "both" is over its quota of 1KB a second on this node; retry after 1 s.');
    // The records bucket was not touched by the refused request.
    const next = quotas.take(both, 1, 0);
    expect(next.ok && next.headers?.ratelimit).toBe('"records";r=89;t=1, "bytes";r=24;t=1');
  });

  it('takes a request larger than the bucket from a full bucket, and says how long the debt takes', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    const big = target(source('big', records(100)));
    expect(quotas.take(big, 1_000, 0).ok).toBe(true);
    const after = quotas.take(big, 1, 0);
    expect(after.ok).toBe(false);
    if (after.ok) return;
    // 900 records of debt and one more at 100 a second: 9.01 s.
    expect(after.retryAfterMs).toBe(9_010);
    expect(after.headers['retry-after']).toBe('10');
    expect(after.headers.ratelimit).toBe('"records";r=0;t=10');
  });

  it('uses the node default for sources without their own quota; a source that sets 0 has none', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks, { recordsPerSecond: 5, bytesPerSecond: 0 });
    const plain = target(source('plain'));
    const exempt = target(source('exempt', records(0)));
    const own = target(source('own', records(50)));
    expect(quotas.take(plain, 5, 0).ok).toBe(true);
    expect(quotas.take(plain, 1, 0).ok).toBe(false);
    for (let i = 0; i < 100; i++) expect(quotas.take(exempt, 10, 0)).toEqual({ ok: true });
    expect(quotas.take(own, 50, 0).ok).toBe(true);
    expect(quotas.quotaOf(plain.source)).toMatchObject({ recordsPerSecond: 5 });
    expect(quotas.quotaOf(exempt.source)).toBeUndefined();
  });

  it('applies a changed definition on the next request, keeping what the bucket holds', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    const v1 = target(source('s', records(10)));
    expect(quotas.take(v1, 10, 0).ok).toBe(true);
    expect(quotas.take(v1, 1, 0).ok).toBe(false);
    // The definition after a settings PATCH is a new object (the ingestion lookup reads it
    // again): 100 ms later the empty bucket of 10 a second is a tenth full, of 1 000 a second.
    clocks.advance(100);
    const v2 = target(source('s', records(1_000)));
    const raised = quotas.take(v2, 100, 0);
    expect(raised.ok && raised.headers).toEqual({ 'ratelimit-policy': '"records";q=1000;w=1', ratelimit: '"records";r=0;t=1' });
    expect(quotas.take(v2, 1, 0).ok).toBe(false);
    // Removing the quota lets everything through at once.
    const v3 = target(source('s'));
    expect(quotas.take(v3, 1_000_000, 0)).toEqual({ ok: true });
  });

  it('counts throttled records and bytes per source, from 0 once the source sends under a quota', () => {
    const clocks = new Clocks();
    const { quotas, counted } = buckets(clocks);
    const s = target(source('counted', records(2)));
    expect(quotas.take(s, 2, 10).ok).toBe(true);
    expect(counted.get('counted')).toEqual({ records: { value: 0 }, bytes: { value: 0 } });
    quotas.take(s, 3, 30);
    quotas.take(s, 1, 7);
    expect(counted.get('counted')).toEqual({ records: { value: 4 }, bytes: { value: 37 } });
  });

  it('shows the quota and a recent throttling to the API, for a minute', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    const s = target(source('shown', [...records(1), { key: 'source.quota.bytesPerSecond', value: '2MB' }]));
    expect(quotas.quotaOf(s.source)).toEqual({ recordsPerSecond: 1, bytesPerSecond: 2 * 1024 * 1024 });
    quotas.take(s, 1, 1);
    quotas.take(s, 1, 1);
    expect(quotas.quotaOf(s.source)).toEqual({ recordsPerSecond: 1, bytesPerSecond: 2 * 1024 * 1024, throttledAt: new Date(clocks.wall).toISOString() });
    clocks.advance(RECENT_MS);
    expect(quotas.quotaOf(s.source)?.throttledAt).toBeUndefined();
  });

  it('drops the buckets of sources that went idle (full again, not throttled lately)', () => {
    const clocks = new Clocks();
    const { quotas } = buckets(clocks);
    for (let i = 0; i < 500; i++) quotas.take(target(source(`s${i}`, records(10))), 1, 0);
    const busy = target(source('busy', records(10)));
    quotas.take(busy, 10, 0);
    quotas.take(busy, 1, 0);
    expect(quotas.size).toBe(501);
    // A minute on, the next request sweeps: only the source still busy (its bucket not full,
    // throttled within the minute) keeps its entry.
    clocks.advance(RECENT_MS - 1);
    quotas.take(busy, 10, 0);
    quotas.take(busy, 1, 0);
    clocks.advance(1);
    quotas.take(busy, 1, 0);
    expect(quotas.size).toBe(1);
  });
});
