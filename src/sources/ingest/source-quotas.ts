/**
 * Per-source quotas on this node (the SourceQuotas contract, quota.ts): a records bucket and a
 * bytes bucket per source that has a quota (token-bucket.ts), each one second of its rate in
 * size. The quota comes from the source's settings (`source.quota.recordsPerSecond`,
 * `source.quota.bytesPerSecond`), else the node's defaults (--source-max-records-per-second,
 * --source-max-bytes-per-second); pipeline/quota-settings.ts reads them.
 *
 * - Per node: in a cluster each node enforces the quota on its own, so a source spread over n
 *   nodes may send up to n times it in all.
 * - A quota change applies on the next request: the definitions the ingestion paths look up are
 *   new objects after every change (sources.ts invalidate()), so the limits read from them are
 *   too, and a bucket whose limits changed is reconfigured, keeping its level.
 * - Memory: one entry per source that sent under a quota lately. Every minute, entries whose
 *   buckets are full again (a full bucket is the same as a new one) and that were not throttled
 *   within the minute are dropped: those of idle, deleted or no longer limited sources.
 * - Cost for a source without a quota: one WeakMap look-up of its definition per request.
 */
import type { Source } from '../../model/definition.js';
import { byteSizeString } from '../../pipeline/units.js';
import { hasQuota, NO_QUOTA, quotaLimitsOf, type QuotaLimits } from '../../pipeline/quota-settings.js';
import type { SourceQuotaView } from '../../contract/stream-sources.js';
import type { QuotaVerdict, SourceQuotas } from './quota.js';
import type { IngestTarget } from './sources.js';
import { TokenBucket } from './token-bucket.js';
import { rateLimitPolicy, rateLimitState, type QuotaName, type QuotaPolicy, type QuotaState } from './rate-limit-headers.js';

/** What the API shows of a source's quota (the console's badges). */
export interface QuotaStatus {
  /** The source's quota and recent throttling on this node; undefined without a quota. */
  quotaOf(source: Source): SourceQuotaView | undefined;
}

/** Where throttled records and bytes are counted (the metrics), per source. */
export interface ThrottleCounters {
  /** The counter cells of a source, made (at 0) when the source first sends under a quota. */
  cellsOf(sourceId: string): { records: { value: number }; bytes: { value: number } };
}

export interface QuotaBucketsOptions {
  /** The node's defaults for sources that set no quota of their own (NO_QUOTA: none). */
  defaults?: QuotaLimits;
  counters?: ThrottleCounters;
  /** Monotonic milliseconds (the buckets). */
  now?: () => number;
  /** Wall-clock milliseconds (when a source was last throttled). */
  wallClock?: () => number;
}

/** How long a throttling counts as recent (the API's `throttledAt`), and how often idle entries are dropped. */
export const RECENT_MS = 60_000;

interface Entry {
  limits: QuotaLimits;
  records?: TokenBucket;
  bytes?: TokenBucket;
  /** The RateLimit-Policy value of the limits. */
  policy: string;
  /** Wall-clock time of the last refusal. */
  throttledAt?: number;
  counted: { records: { value: number }; bytes: { value: number } };
}

const ALLOWED: QuotaVerdict = { ok: true };
const NO_COUNTERS: ThrottleCounters = { cellsOf: () => ({ records: { value: 0 }, bytes: { value: 0 } }) };

/** A bucket holds one second of its rate (at least one unit, so that a request of one always fits a full bucket). */
const bucketSize = (perSecond: number): number => Math.max(1, perSecond);

export class QuotaBuckets implements SourceQuotas, QuotaStatus {
  private readonly defaults: QuotaLimits;
  private readonly counters: ThrottleCounters;
  private readonly now: () => number;
  private readonly wallClock: () => number;
  /** The limits of a definition, read once per definition object. */
  private readonly limits = new WeakMap<Source, QuotaLimits>();
  private readonly entries = new Map<string, Entry>();
  private nextSweep: number;

  constructor(options: QuotaBucketsOptions = {}) {
    this.defaults = options.defaults ?? NO_QUOTA;
    this.counters = options.counters ?? NO_COUNTERS;
    this.now = options.now ?? (() => performance.now());
    this.wallClock = options.wallClock ?? Date.now;
    this.nextSweep = this.now() + RECENT_MS;
  }

  /** How many sources have buckets now (tests: idle ones are dropped). */
  get size(): number {
    return this.entries.size;
  }

  take(target: IngestTarget, records: number, bytes: number): QuotaVerdict {
    const limits = this.limitsOf(target.source);
    if (!hasQuota(limits)) return ALLOWED;
    const now = this.now();
    if (now >= this.nextSweep) this.sweep(now);
    const entry = this.entryOf(target.source.sourceId, limits, now);
    const recordsWait = entry.records ? entry.records.waitMs(records, now) : 0;
    const bytesWait = entry.bytes ? entry.bytes.waitMs(bytes, now) : 0;
    if (recordsWait === 0 && bytesWait === 0) {
      entry.records?.take(records, now);
      entry.bytes?.take(bytes, now);
      return { ok: true, headers: { 'ratelimit-policy': entry.policy, ratelimit: this.state(entry, now) } };
    }
    entry.throttledAt = this.wallClock();
    entry.counted.records.value += records;
    entry.counted.bytes.value += bytes;
    const limit: QuotaName = recordsWait >= bytesWait ? 'records' : 'bytes';
    const retryAfterMs = Math.max(1, recordsWait, bytesWait);
    const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return {
      ok: false,
      limit,
      retryAfterMs,
      headers: { 'retry-after': String(retryAfter), 'ratelimit-policy': entry.policy, ratelimit: this.state(entry, now) },
      message: `The source "${target.source.sourceId}" is over its quota of ${describe(limit, limits)} on this node; retry after ${retryAfter} s.`,
    };
  }

  quotaOf(source: Source): SourceQuotaView | undefined {
    const limits = this.limitsOf(source);
    if (!hasQuota(limits)) return undefined;
    const view: SourceQuotaView = {};
    if (limits.recordsPerSecond > 0) view.recordsPerSecond = limits.recordsPerSecond;
    if (limits.bytesPerSecond > 0) view.bytesPerSecond = limits.bytesPerSecond;
    const at = this.entries.get(source.sourceId)?.throttledAt;
    if (at !== undefined && this.wallClock() - at < RECENT_MS) view.throttledAt = new Date(at).toISOString();
    return view;
  }

  private limitsOf(source: Source): QuotaLimits {
    let limits = this.limits.get(source);
    if (limits === undefined) {
      limits = quotaLimitsOf(source.config, this.defaults);
      this.limits.set(source, limits);
    }
    return limits;
  }

  private entryOf(sourceId: string, limits: QuotaLimits, now: number): Entry {
    let entry = this.entries.get(sourceId);
    if (!entry) {
      entry = { limits, policy: '', counted: this.counters.cellsOf(sourceId) };
      this.configure(entry, limits, now);
      this.entries.set(sourceId, entry);
    } else if (entry.limits !== limits && (entry.limits.recordsPerSecond !== limits.recordsPerSecond || entry.limits.bytesPerSecond !== limits.bytesPerSecond)) {
      this.configure(entry, limits, now);
    }
    entry.limits = limits;
    return entry;
  }

  /** Buckets for the limits: new ones full, changed ones keep their level. */
  private configure(entry: Entry, limits: QuotaLimits, now: number): void {
    entry.records = bucketFor(entry.records, limits.recordsPerSecond, now);
    entry.bytes = bucketFor(entry.bytes, limits.bytesPerSecond, now);
    const policies: QuotaPolicy[] = [];
    if (entry.records) policies.push({ name: 'records', quota: limits.recordsPerSecond });
    if (entry.bytes) policies.push({ name: 'bytes', quota: limits.bytesPerSecond });
    entry.policy = rateLimitPolicy(policies);
    entry.limits = limits;
  }

  private state(entry: Entry, now: number): string {
    const states: QuotaState[] = [];
    if (entry.records) states.push({ name: 'records', remaining: entry.records.remaining(now), resetSeconds: Math.ceil(entry.records.msUntilFull(now) / 1000) });
    if (entry.bytes) states.push({ name: 'bytes', remaining: entry.bytes.remaining(now), resetSeconds: Math.ceil(entry.bytes.msUntilFull(now) / 1000) });
    return rateLimitState(states);
  }

  /** Drops the entries that a new one would equal (full buckets) and whose throttling is not recent. */
  private sweep(now: number): void {
    this.nextSweep = now + RECENT_MS;
    const wall = this.wallClock();
    for (const [sourceId, entry] of this.entries) {
      const full = (entry.records?.msUntilFull(now) ?? 0) === 0 && (entry.bytes?.msUntilFull(now) ?? 0) === 0;
      const recent = entry.throttledAt !== undefined && wall - entry.throttledAt < RECENT_MS;
      if (full && !recent) this.entries.delete(sourceId);
    }
  }
}

function bucketFor(bucket: TokenBucket | undefined, perSecond: number, now: number): TokenBucket | undefined {
  if (perSecond <= 0) return undefined;
  if (!bucket) return new TokenBucket(perSecond, bucketSize(perSecond), now);
  bucket.reconfigure(perSecond, bucketSize(perSecond), now);
  return bucket;
}

function describe(limit: QuotaName, limits: QuotaLimits): string {
  return limit === 'records' ? `${limits.recordsPerSecond} records a second` : `${byteSizeString(limits.bytesPerSecond)} a second`;
}
