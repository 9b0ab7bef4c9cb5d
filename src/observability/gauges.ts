/**
 * The gauges, read from the stores when scraped: they are right after a restart, and what was
 * removed (a deleted sink) disappears. Slices and files are this node's (node-local level
 * state); the lag is this node's writers'.
 */
import type { EventLog } from '../ports/event-log.js';
import type { MetadataReader } from '../ports/metadata-store.js';
import type { FileEntry, SinkKey, SliceEntry } from '../model/levels.js';
import { parseInstanceId } from '../levels/instances.js';
import type { Metrics } from './metrics.js';
import { sourceOfTopic } from './metered-event-log.js';

export interface GaugeSources {
  store: MetadataReader;
  eventLog: EventLog;
  /** The sink writers of this node and the partitions they read (none on a node without the sink role); `failing` while the writer is. */
  writers(): Array<{ key: SinkKey; partitionId: string; failing?: boolean }>;
  /** The sink's committed position in its partition (levels' consumer offset). */
  committedOffset(key: SinkKey): number | undefined;
  /** Cluster mode: the partitions this node works on; undefined on a node of its own. */
  ownedPartitions?(): number;
}

const sinkLabel = (entry: { sourceId: string; sinkId: string }) => ({ source: entry.sourceId, sink: parseInstanceId(entry.sinkId).sinkId });

function add(counts: Map<string, number>, key: string, n: number): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

export function refreshGauges(metrics: Metrics, from: GaugeSources): void {
  const slices = new Map<string, number>();
  const files = new Map<string, number>();
  const bytes = new Map<string, number>();
  const retries = new Map<string, number>();
  const key = (labels: Record<string, string>) => JSON.stringify(labels);
  for (const { value: s } of from.store.list<SliceEntry>('storage/slice/')) {
    const labels = sinkLabel(s);
    add(slices, key({ ...labels, state: s.state }), 1);
    if (s.state === 'writing' || s.state === 'closing' || s.state === 'uploading') add(bytes, key({ ...labels, level: 'local' }), s.uncompressedSize);
    if (s.state === 'uploaded') add(bytes, key({ ...labels, level: 'staging' }), s.compressedSize);
    if (s.retryAfter !== undefined && s.state !== 'imported') add(retries, key(labels), 1);
  }
  for (const { value: f } of from.store.list<FileEntry>('storage/file/')) {
    const labels = sinkLabel(f);
    add(files, key({ ...labels, state: f.state }), 1);
    if (f.retryAfter !== undefined && f.state !== 'imported') add(retries, key(labels), 1);
  }
  metrics.slices.reset();
  for (const [labels, n] of slices) metrics.slices.set(JSON.parse(labels), n);
  metrics.files.reset();
  for (const [labels, n] of files) metrics.files.set(JSON.parse(labels), n);
  metrics.levelBytes.reset();
  for (const [labels, n] of bytes) metrics.levelBytes.set(JSON.parse(labels), n);
  metrics.importRetriesPending.reset();
  for (const [labels, n] of retries) metrics.importRetriesPending.set(JSON.parse(labels), n);

  // Lag: what the sink's writers have not mapped yet, in records and in age of the oldest.
  metrics.sinkLagRecords.reset();
  metrics.sinkLagSeconds.reset();
  const records = new Map<string, number>();
  const seconds = new Map<string, number>();
  for (const { key: sink, partitionId } of from.writers()) {
    const committed = from.committedOffset(sink) ?? 0;
    const lag = Math.max(0, from.eventLog.headOffset(partitionId) - committed);
    const labels = key(sinkLabel(sink));
    add(records, labels, lag);
    let age = 0;
    if (lag > 0) {
      const [oldest] = from.eventLog.read(partitionId, committed, 1);
      if (oldest) age = Math.max(0, (Date.now() - oldest.record.receivedAt.getTime()) / 1000);
    }
    seconds.set(labels, Math.max(seconds.get(labels) ?? 0, age));
  }
  // The counters of every sink with a writer here have their series, at 0 until something counts.
  for (const { key: sink } of from.writers()) metrics.knownSink({ ...sinkLabel(sink), branch: String(sink.branchId) });
  for (const { key: sink } of from.writers()) {
    const labels = key(sinkLabel(sink));
    if (!retries.has(labels)) metrics.importRetriesPending.set(sinkLabel(sink), 0);
  }
  // Failing: 1 when a writer of the sink on this node is failing, 0 for the sinks working here.
  metrics.sinkFailing.reset();
  const failing = new Map<string, number>();
  for (const { key: sink, failing: f } of from.writers()) {
    const labels = key({ ...sinkLabel(sink), branch: String(sink.branchId) });
    failing.set(labels, Math.max(failing.get(labels) ?? 0, f ? 1 : 0));
  }
  for (const [labels, n] of failing) metrics.sinkFailing.set(JSON.parse(labels), n);
  for (const [labels, n] of records) metrics.sinkLagRecords.set(JSON.parse(labels), n);
  for (const [labels, n] of seconds) metrics.sinkLagSeconds.set(JSON.parse(labels), n);

  metrics.logBytes.reset();
  for (const [topic, n] of from.eventLog.bytesHeld() ?? []) metrics.logBytes.set({ source: sourceOfTopic(topic) }, n);
  if (from.ownedPartitions) metrics.partitionsOwned.set(from.ownedPartitions());
}
