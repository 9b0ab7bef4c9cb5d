import type { MetadataStore } from '../connectors/metadata/store.js';

/** Record counts and sizes of one level or of all levels together. */
export interface LevelStatistics {
  firstRecordAt?: string;
  lastRecordAt?: string;
  recordsCount: number;
  compressedSize: number;
  uncompressedSize: number;
}

export interface SinkStatisticsTotal {
  total: LevelStatistics;
  levels: Partial<Record<'local' | 'staging' | 'target', LevelStatistics>>;
}

export interface FileStatistics {
  state: 'writing' | 'closing' | 'importing' | 'imported';
  openedAt: string;
  closingAt?: string;
  importingAt?: string;
  importedAt?: string;
  retryAttempt?: number;
  retryReason?: string;
  retryAfter?: string;
  statistics: SinkStatisticsTotal | { total: null; levels: Record<string, never> };
}

const resetKey = (branchId: number, sourceId: string, sinkId?: string) =>
  sinkId === undefined ? `storage/statsReset/${branchId}/${sourceId}` : `storage/statsReset/${branchId}/${sourceId}/${sinkId}`;

/**
 * Statistics of sinks by storage level. Files and slices are written by the record's path
 * (a later issue); until data flows every sink has zero records, and the API shows exactly
 * that. Clearing records a reset marker: statistics before it are hidden.
 */
export class StatisticsService {
  constructor(private readonly store: MetadataStore) {}

  sinkTotal(_branchId: number, _sourceId: string, _sinkId: string): SinkStatisticsTotal {
    return { total: { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 }, levels: {} };
  }

  sinkFiles(_branchId: number, _sourceId: string, _sinkId: string, _failedOnly: boolean): FileStatistics[] {
    return [];
  }

  clear(branchId: number, sourceId: string, sinkId?: string): void {
    this.store.transact((tx) => tx.put(resetKey(branchId, sourceId, sinkId), new Date().toISOString()));
  }
}
