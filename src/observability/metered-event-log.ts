/**
 * The event log with its appends counted: every ingestion path (HTTP records, the fast path,
 * connector batches, OTLP) acknowledges through EventLog.append, so counting there counts them
 * all, once, without touching the routes. Refusals are counted by reason: the log's own budget,
 * the disk, or (Kafka) the broker not acknowledging. Counting costs the hot path a few
 * increments of counters looked up once per topic, no promise hop.
 */
import type { IngestRecord } from '../model/record.js';
import { EventLogFullError, type AppendResult, type EventLog } from '../ports/event-log.js';
import type { Metrics, RefusalReason } from './metrics.js';

/** `<projectId>.<branchId>.<sourceId>` (event-log.ts sourceTopic): the source id, a configured one. */
export function sourceOfTopic(topic: string): string {
  const parts = topic.split('.');
  return parts.length >= 3 ? parts.slice(2).join('.') : topic;
}

export function refusalReason(err: unknown): RefusalReason {
  const message = err instanceof Error ? err.message : String(err);
  if (/disk/i.test(message)) return 'disk_full';
  if (!(err instanceof EventLogFullError) || /kafka|broker|acknowledg|cluster/i.test(message)) return 'cluster_unavailable';
  return 'log_full';
}

interface TopicCounters {
  appended: { value: number };
  records: { value: number };
  bytes: { value: number };
}

export class MeteredEventLog implements EventLog {
  constructor(
    private readonly log: EventLog,
    private readonly metrics: Metrics,
  ) {}


  get coordinated(): boolean {
    return this.log.coordinated;
  }

  append(topic: string, records: IngestRecord[]): AppendResult {
    let result: AppendResult;
    try {
      result = this.log.append(topic, records);
    } catch (err) {
      this.metrics.ingestRefused.inc({ reason: refusalReason(err) });
      throw err;
    }
    // Counted at once, on the hot path without a promise hop; a durable write that fails later is
    // a refusal too (its records stay counted as appended: the log had taken them).
    const counters = this.countersOf(topic, records[0]?.signal || 'http');
    let bytes = 0;
    for (const r of records) bytes += r.body.length;
    counters.appended.value += records.length;
    counters.records.value += records.length;
    counters.bytes.value += bytes;
    result.durable.catch((err: unknown) => this.metrics.ingestRefused.inc({ reason: refusalReason(err) }));
    return result;
  }

  /** The counters' cells of a topic and signal, made once (a lookup by the two strings, no key built per call). */
  private countersOf(topic: string, signal: string): TopicCounters {
    let bySignal = this.counters.get(topic);
    if (!bySignal) this.counters.set(topic, (bySignal = new Map()));
    let counters = bySignal.get(signal);
    if (!counters) {
      const source = sourceOfTopic(topic);
      counters = {
        appended: this.metrics.logAppended.cell({ source }),
        records: this.metrics.ingestRecords.cell({ source, signal }),
        bytes: this.metrics.ingestBytes.cell({ source }),
      };
      bySignal.set(signal, counters);
    }
    return counters;
  }

  private readonly counters = new Map<string, Map<string, TopicCounters>>();

  // ---- the rest is the log's own ----
  read: EventLog['read'] = (topic, afterOffset, limit) => this.log.read(topic, afterOffset, limit);
  fetch: EventLog['fetch'] = (topic, afterOffset, limit) => this.log.fetch(topic, afterOffset, limit);
  acknowledge: EventLog['acknowledge'] = (topic, throughOffset) => this.log.acknowledge(topic, throughOffset);
  release: EventLog['release'] = (topic, throughOffset) => this.log.release(topic, throughOffset);
  claim: EventLog['claim'] = (topic) => this.log.claim(topic);
  onOwnership: EventLog['onOwnership'] = (listener) => this.log.onOwnership(listener);
  headOffset: EventLog['headOffset'] = (topic) => this.log.headOffset(topic);
  tailOffset: EventLog['tailOffset'] = (topic) => this.log.tailOffset(topic);
  onDurable: EventLog['onDurable'] = (topic, listener) => this.log.onDurable(topic, listener);
  applyRetention: EventLog['applyRetention'] = (policy, now) => this.log.applyRetention(policy, now);
  dropTopic: EventLog['dropTopic'] = (topic) => this.log.dropTopic(topic);
  ready: EventLog['ready'] = () => this.log.ready();
  bytesHeld: EventLog['bytesHeld'] = () => this.log.bytesHeld();
  close: EventLog['close'] = () => this.log.close();
}
