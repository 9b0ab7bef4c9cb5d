import { describe, expect, it } from 'vitest';
import { compileMapping, createRecordContext } from '../../../src/pipeline/columns/index.js';
import type { Column } from '../../../src/model/definition.js';
import { csvRows } from '../../../src/pipeline/csv-rows.js';
import { decodeExportRequest } from '../../../src/sources/otlp/decode.js';
import { flattenLogs } from '../../../src/sources/otlp/flatten.js';
import type { ExportLogsRequest } from '../../../src/sources/otlp/model.js';
import { ndjsonBody, ndjsonRows, otlpBody, otlpRows, PATH_COLUMNS } from '../../../bench/e2e-data.js';
import { foldProfile, frameStage, perRecord, type CpuProfile } from '../../../bench/profile-stages.js';

/** The rows Sluice's sink renders for records (the five path columns), as CSV. */
async function sluiceCsv(records: string[], signal: '' | 'logs'): Promise<string> {
  const mapping = await compileMapping(PATH_COLUMNS as unknown as Column[]);
  const rows = records.map((r) =>
    mapping.renderSync(createRecordContext({ receivedAt: new Date(0), ip: '127.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(r), signal })),
  );
  return csvRows(rows);
}

describe('e2e bench baseline', () => {
  it('picks the same cells from an OTLP request as the paths sink renders from its flattened records', async () => {
    const body = otlpBody(64);
    const flattened = flattenLogs(decodeExportRequest('logs', 'protobuf', body) as ExportLogsRequest);
    const baseline = otlpRows(body);
    expect(baseline).toHaveLength(64);
    expect(csvRows(baseline)).toBe(await sluiceCsv(flattened, 'logs'));
    // The cells are the records' values, not empty defaults.
    expect(baseline[0][4]).toMatch(/^\{"http\.method":"GET"/);
    expect(baseline[0][3]).toMatch(/^[0-9a-f]{32}$/);
  });

  it('picks the same cells from an NDJSON batch as the paths sink renders from its lines', async () => {
    const body = ndjsonBody(50);
    const lines = body.toString().split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(50);
    const baseline = ndjsonRows(body);
    expect(csvRows(baseline)).toBe(await sluiceCsv(lines, ''));
    // Both paths carry the same records.
    expect(baseline.map((r) => r.slice(1))).toEqual(otlpRows(otlpBody(50)).map((r) => r.slice(1)));
  });
});

describe('e2e bench profile folding', () => {
  const at = (file: string, functionName = 'f') => ({ functionName, url: `file:///repo/dist/${file}.js` });

  it('maps Sluice files to stages, and leaves libraries and Node to their callers', () => {
    expect(frameStage(at('sources/otlp/decode'))).toBe('decode');
    expect(frameStage(at('adapters/event-log/lmdb-log', 'append'))).toBe('log append');
    expect(frameStage(at('adapters/event-log/lmdb-log', 'read'))).toBe('log read');
    expect(frameStage(at('pipeline/csv-rows'))).toBe('CSV');
    expect(frameStage(at('adapters/staging/local-directory-staging'))).toBe('gzip');
    expect(frameStage(at('levels/import'))).toBe('import');
    expect(frameStage(at('levels/repository'))).toBe('level bookkeeping');
    expect(frameStage(at('actors/source-router'))).toBe('routing');
    expect(frameStage(at('jsonnet/compile'))).toBe('render');
    expect(frameStage(at('server'))).toBe('other Sluice code (outside)');
    expect(frameStage({ functionName: 'decode', url: 'file:///repo/node_modules/protobufjs/src/reader.js' })).toBeUndefined();
    expect(frameStage({ functionName: 'emit', url: 'node:events' })).toBeUndefined();
  });

  it('gives each sample the stage of its nearest Sluice frame, weighted by the time to the next sample', () => {
    const lib = (url: string, functionName = 'g') => ({ functionName, url });
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: lib('', '(root)'), children: [2, 3, 4, 5, 8] },
        { id: 2, callFrame: lib('', '(idle)') },
        { id: 3, callFrame: lib('', '(garbage collector)') },
        { id: 4, callFrame: lib('', '(program)') },
        // route → decode → protobufjs: the library's time is decode's
        { id: 5, callFrame: at('sources/otlp/routes', 'handler'), children: [6] },
        { id: 6, callFrame: at('sources/otlp/decode', 'decodeExportRequest'), children: [7] },
        { id: 7, callFrame: lib('file:///repo/node_modules/protobufjs/src/reader.js') },
        // no Sluice frame: the library itself
        { id: 8, callFrame: lib('file:///repo/node_modules/fastify/lib/route.js'), children: [9] },
        { id: 9, callFrame: lib('node:internal/streams/readable') },
      ],
      samples: [7, 7, 5, 3, 2, 4, 9, 6],
      timeDeltas: [0, 100, 200, 100, 100, 1000, 100, 300],
    };
    const totals = foldProfile(profile);
    // sample i weighs timeDeltas[i + 1]; the last the mean interval (1900 / 7)
    expect(totals.get('decode')).toBeCloseTo(100 + 200 + 1900 / 7, 6);
    expect(totals.get('http routes (outside)')).toBe(100);
    expect(totals.get('gc (outside)')).toBe(100);
    expect(totals.get('program (outside)')).toBe(100);
    expect(totals.get('node and libraries (outside): node:internal/streams')).toBe(300);
    expect(totals.has('idle')).toBe(false);
    const per = perRecord(totals, 100);
    expect(Object.keys(per).slice(0, 9)).toEqual(['decode', 'log append', 'log read', 'routing', 'render', 'CSV', 'gzip', 'level bookkeeping', 'import']);
    expect(per['log append']).toBe(0);
    expect(per['decode']).toBeCloseTo((300 + 1900 / 7) / 100, 2);
  });
});
