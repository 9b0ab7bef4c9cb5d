/**
 * The files of a sink through the HTTP API, from a data directory seeded with stored files
 * (test/helpers/stored-files.ts): a file with statistics shows them, a file without any has no
 * `statistics` key, and the service's own writing file (no records yet) has `total: null`; in
 * statistics/files and in the aggregation endpoint's files alike.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';
import { STORED, seedStoredFiles } from '../helpers/stored-files.js';

const B = '/v1/branches/default';
let svc: TestService;

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-file-stats-'));
  await seedStoredFiles(dataDir, { projectId: 11, branchId: 22, sourceId: 'shop', sinkId: 'events' });
  // No periodic checks: the stored files stay as seeded (no upload, import or retention).
  svc = await TestService.start({ dataDir, args: ['--check-interval', '24h'] });
  expect((await svc.task('POST', `${B}/sources`, { json: { sourceId: 'shop', name: 'Shop', type: 'http' } })).status).toBe('success');
  const created = await svc.task('POST', `${B}/sources/shop/sinks`, {
    json: { sinkId: 'events', name: 'Events', type: 'table', table: { type: 'keboola', tableId: 'in.c-shop.events', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
  });
  expect(created.status).toBe('success');
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

const STAGING = { firstRecordAt: '2000-01-01T03:01:00.000Z', lastRecordAt: '2000-01-01T03:02:00.000Z', recordsCount: 2, compressedSize: 8, uncompressedSize: 20 };

describe('statistics of files', () => {
  it('statistics/files: statistics where the file has some, none where it has none', async () => {
    const res = await svc.call('GET', `${B}/sources/shop/sinks/events/statistics/files`);
    expect(res.status).toBe(200);
    const files = res.json.files as Array<Record<string, unknown>>;
    expect(files.map((f) => f.state)).toEqual(['imported', 'importing', 'writing', 'closing']);
    expect(files[0]).toEqual({
      state: 'imported', openedAt: STORED.imported, closingAt: '2000-01-01T02:10:00.000Z', importingAt: '2000-01-01T02:20:00.000Z', importedAt: '2000-01-01T02:30:00.000Z',
    });
    expect(files[1]).toEqual({
      state: 'importing', openedAt: STORED.importing, closingAt: '2000-01-01T03:10:00.000Z', importingAt: '2000-01-01T03:20:00.000Z',
      statistics: { total: STAGING, levels: { staging: STAGING } },
    });
    // The service's own writing file: statistics from its opening, of no records.
    expect(files[2]).toEqual({ state: 'writing', openedAt: expect.any(String), statistics: { total: null, levels: {} } });
    expect(files[3]).toEqual({
      state: 'closing', openedAt: STORED.failed, closingAt: '2000-01-01T04:10:00.000Z', retryAttempt: 1, retryReason: 'upload failed', retryAfter: '2000-01-01T04:20:00.000Z',
    });
  });

  it('aggregation/sources: the sink\'s files, newest first, with the same statistics', async () => {
    const res = await svc.call('GET', `${B}/aggregation/sources`);
    expect(res.status).toBe(200);
    const files = res.json.sources[0].sinks[0].statistics.files as Array<Record<string, unknown>>;
    expect(files.map((f) => [f.state, 'statistics' in f])).toEqual([['writing', true], ['closing', false], ['importing', true], ['imported', false]]);
    expect(files[2].statistics).toEqual({ total: STAGING, levels: { staging: STAGING } });
  });
});
