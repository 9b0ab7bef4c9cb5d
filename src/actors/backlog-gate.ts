import { parsePartitionId } from '../ports/event-log.js';
import type { Logger } from '../logger.js';

/**
 * Back-pressure from the sinks to ingestion. Each source router reports how far its sinks are
 * behind the log's head, in records (the slowest sink of the group it reads for: a failing
 * sink, or one whose mapping is slow and renders apart, is left out and does not hold its
 * source back). Once a source's sinks are more than `limit` records behind, its ingestion
 * endpoints refuse records (429 with Retry-After, which HTTP clients, OTLP exporters and the
 * Kafka Connect HTTP sink retry) until the sinks have caught up to half the limit. Without it,
 * ingestion takes the event loop and the cores for as long as the load lasts, the sinks fall
 * further behind, and what is acknowledged is a backlog, not rows in the table. The backlog
 * stays in the log (on disk, bounded), never in memory.
 *
 * A topic with partitions (Kafka) is refused while any of its partitions read on this node is
 * behind. Checked once per request: one set lookup.
 */
export class BacklogGate {
  /** Partition ids behind beyond the limit, by topic. */
  private readonly behind = new Map<string, Set<string>>();

  /**
   * @param limit records a source's sinks may be behind before ingestion is refused (0: never).
   * @param log where it says when a source's ingestion starts and stops being refused (once
   *   each: the requests refused meanwhile are not logged one by one).
   */
  constructor(readonly limit: number, private readonly log?: Pick<Logger, 'warn' | 'info'>) {}

  /** How far behind the partition's sinks are now (0 when it has none, or is not read here any more). */
  report(partitionId: string, backlog: number): void {
    if (this.limit <= 0) return;
    const { topic } = parsePartitionId(partitionId);
    const set = this.behind.get(topic);
    if (backlog > this.limit) {
      if (set?.has(partitionId)) return;
      if (set) set.add(partitionId);
      else this.behind.set(topic, new Set([partitionId]));
      this.log?.warn(
        { partition: partitionId, backlog, limit: this.limit },
        'the sinks of a source are too far behind its records: its ingestion answers 429 with Retry-After until they are within half the limit (--max-sink-backlog)',
      );
    } else if (set?.has(partitionId) && backlog <= this.limit / 2) {
      set.delete(partitionId);
      if (set.size === 0) this.behind.delete(topic);
      this.log?.info({ partition: partitionId, backlog, limit: this.limit }, 'the sinks of a source have caught up: its ingestion takes records again');
    }
  }

  /** Whether ingestion into the topic is refused now. */
  refuses(topic: string): boolean {
    return this.behind.has(topic);
  }
}
