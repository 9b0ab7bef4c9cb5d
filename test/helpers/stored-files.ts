/**
 * A data directory seeded with a sink's files as the reference's stored state has them (through
 * the Stream API suite's etcd fixture loader), before a service starts on it: files in several
 * states, some with statistics and some without (no statistics key for their slices, or no
 * slice at all). The service's own writing file comes when the test creates the sink.
 */
import { loadEtcdFixture } from '../conformance/stream-api/etcd-fixtures.js';

export const STORED = {
  /** Imported; its slice has no statistics key. */
  imported: '2000-01-01T02:00:00.000Z',
  /** Importing; its slice has statistics (2 records, staging). */
  importing: '2000-01-01T03:00:00.000Z',
  /** Closing and failed; no slice at all. */
  failed: '2000-01-01T04:00:00.000Z',
} as const;

const block = (key: string, value: unknown) => `<<<<<\n${key}\n-----\n${JSON.stringify(value)}\n>>>>>\n`;

export async function seedStoredFiles(dataDir: string, sink: { projectId: number; branchId: number; sourceId: string; sinkId: string }): Promise<void> {
  const path = `${sink.projectId}/${sink.branchId}/${sink.sourceId}/${sink.sinkId}`;
  const text = [
    block(`storage/file/all/${path}/${STORED.imported}`, {
      state: 'imported', closingAt: '2000-01-01T02:10:00.000Z', importingAt: '2000-01-01T02:20:00.000Z', importedAt: '2000-01-01T02:30:00.000Z',
    }),
    block(`storage/slice/all/${path}/${STORED.imported}/my-volume/${STORED.imported}`, { state: 'imported' }),
    block(`storage/file/all/${path}/${STORED.importing}`, { state: 'importing', closingAt: '2000-01-01T03:10:00.000Z', importingAt: '2000-01-01T03:20:00.000Z' }),
    block(`storage/slice/all/${path}/${STORED.importing}/my-volume/${STORED.importing}`, { state: 'uploaded' }),
    block(`storage/stats/staging/${path}/${STORED.importing}/my-volume/${STORED.importing}/value`, {
      firstRecordAt: '2000-01-01T03:01:00.000Z', lastRecordAt: '2000-01-01T03:02:00.000Z', recordsCount: 2, uncompressedSize: '20B', compressedSize: '8B',
    }),
    block(`storage/file/all/${path}/${STORED.failed}`, {
      state: 'closing', closingAt: '2000-01-01T04:10:00.000Z', retryAttempt: 1, retryReason: 'upload failed', retryAfter: '2000-01-01T04:20:00.000Z',
    }),
  ].join('\n');
  await loadEtcdFixture(dataDir, text, { projectId: sink.projectId });
}
