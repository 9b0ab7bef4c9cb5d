/**
 * The API contract (see stream-sources.ts for why the types are the source): the Stream API's
 * statistics of sinks (src/levels/statistics.ts computes them, src/api/stream/statistics.ts
 * answers them).
 */
import type { Page, SinkView, SourceView } from './stream-sources.js';

/** Record counts and sizes of one level or of all levels together. */
export interface LevelStatistics {
  firstRecordAt?: string;
  lastRecordAt?: string;
  recordsCount: number;
  compressedSize: number;
  uncompressedSize: number;
}

/** The storage levels: local = on the node's disk, staging = uploaded, target = imported. */
export type Level = 'local' | 'staging' | 'target';

export interface SinkStatisticsTotal {
  total: LevelStatistics;
  levels: Partial<Record<Level, LevelStatistics>>;
}

/** A file of a sink with its state and statistics. */
export interface FileStatistics {
  state: 'writing' | 'closing' | 'importing' | 'imported';
  openedAt: string;
  closingAt?: string;
  importingAt?: string;
  importedAt?: string;
  retryAttempt?: number;
  retryReason?: string;
  retryAfter?: string;
  /**
   * Absent in the failed-files listing, and for a file none of whose slices has statistics
   * recorded (SliceEntry.noStatistics, or no slice at all), as in the reference. `total: null`
   * with no levels: statistics of no records (a slice opened, nothing written yet).
   */
  statistics?: SinkStatisticsTotal | { total: null; levels: Record<string, never> };
}

/**
 * GET .../sinks/{sinkId}/statistics/total: the reference's answer, with Sluice's additions only
 * when there is something to say (records failed now; records the sink's filter skipped since
 * the statistics were last cleared; the sink failing on this node).
 */
export interface SinkStatisticsTotalAnswer extends SinkStatisticsTotal {
  mappingFailures?: { count: number };
  filtered?: { count: number };
  failing?: { reason: string; since: string; retryAfter: string };
}

/** GET .../sinks/{sinkId}/statistics/files. */
export interface SinkFilesAnswer {
  files: FileStatistics[];
}

/** A sink of the aggregation endpoint: with its statistics and its 50 latest files, newest first. */
export interface AggregatedSink extends SinkView {
  statistics: SinkStatisticsTotal & { files: FileStatistics[] };
}

/** GET .../aggregation/sources: sources with their sinks and the sinks' statistics (for UIs). */
export interface AggregatedSourcesAnswer {
  projectId: number;
  branchId: number;
  page: Page;
  sources: (SourceView & { sinks: AggregatedSink[] })[];
}

/**
 * GET .../sinks/{sinkId}/statistics/history (Sluice's): samples of the sink's totals every
 * `intervalSeconds` over the last hours, oldest first, kept in the memory of the node that
 * answers (a restart starts a new history).
 */
export interface SinkStatisticsHistoryAnswer {
  intervalSeconds: number;
  points: { t: number; received: number; imported: number; failed: number }[];
}
