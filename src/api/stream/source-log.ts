/**
 * Reading a source's newest records from its event log, for the read-only routes that show or
 * sample them (recent-records.ts, mapping-proposal.ts). Through the EventLog port's `fetch`, so
 * it neither moves nor waits for the sinks' reading.
 */
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import type { StreamRuntime } from '../../actors/stream-runtime.js';
import { partitionIdOf, type EventLog, type LoggedRecord } from '../../ports/event-log.js';

export type SourceLog = Pick<EventLog, 'headOffset' | 'tailOffset' | 'fetch'>;

/** What a route that reads a source's records needs: the source and its sinks (the rights), its log. */
export interface SourceRecordRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: Pick<SinkService, 'list'>;
  eventLog: SourceLog;
  runtime: Pick<StreamRuntime, 'topicOf'>;
  config: Pick<Config, 'kafkaBrokers' | 'kafkaPartitions'>;
}

/** A record and the partition it was read from. */
export interface PartitionRecord {
  partition: number;
  logged: LoggedRecord;
}

/** How many partitions a source's topic has: with Kafka, a topic Sluice created has this many, each its own offsets. */
export function partitionsOf(config: Pick<Config, 'kafkaBrokers' | 'kafkaPartitions'>): number {
  return config.kafkaBrokers ? Math.max(1, config.kafkaPartitions) : 1;
}

/**
 * A partition's records newest first (from its head at the call), read backwards `chunk`
 * records at a time down to the oldest one kept; the caller stops when it has enough.
 */
export async function* newestFirst(log: SourceLog, partitionId: string, chunk: number): AsyncGenerator<LoggedRecord> {
  const head = log.headOffset(partitionId);
  const floor = Math.max(log.tailOffset(partitionId) - 1, 0);
  for (let end = head; end > floor;) {
    const after = Math.max(floor, end - chunk);
    const batch = await log.fetch(partitionId, after, end - after);
    for (let i = batch.length - 1; i >= 0; i--) {
      if (batch[i].offset <= end) yield batch[i];
    }
    end = after;
  }
}

/**
 * The newest records of every partition of a topic, merged newest first by receive time (a tie:
 * the lower partition first), each partition read `chunk` records at a time as the merge needs
 * them.
 */
export async function* newestOfTopic(log: SourceLog, topic: string, partitions: number, chunk: number): AsyncGenerator<PartitionRecord> {
  const readers = Array.from({ length: partitions }, (_, partition) => ({ partition, records: newestFirst(log, partitionIdOf(topic, partition), chunk) }));
  const heads = await Promise.all(readers.map(async (r) => (await r.records.next()).value as LoggedRecord | undefined));
  for (;;) {
    let pick = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (h !== undefined && (pick < 0 || newer(h, heads[pick] as LoggedRecord))) pick = i;
    }
    if (pick < 0) return;
    yield { partition: readers[pick].partition, logged: heads[pick] as LoggedRecord };
    heads[pick] = (await readers[pick].records.next()).value as LoggedRecord | undefined;
  }
}

/** The first `n` records (fewer when there are fewer); stops the reading there. */
export async function take<T>(records: AsyncGenerator<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  if (n <= 0) return out;
  for await (const r of records) {
    out.push(r);
    if (out.length >= n) break;
  }
  return out;
}

function newer(a: LoggedRecord, b: LoggedRecord): boolean {
  return a.record.receivedAt.getTime() > b.record.receivedAt.getTime();
}
