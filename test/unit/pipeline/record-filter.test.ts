/**
 * A sink's record filter (pipeline/record-filter.ts) through the batch renderer, the render
 * thread and the mapping cache: `true` maps, `false` skips (filtered, by batch index), anything
 * else or an error is the record's failure with a reason that says what the filter did.
 */
import { describe, expect, it } from 'vitest';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { typeScriptWorker, WorkerRenderer } from '../../../src/actors/render/worker-renderer.js';
import { InThreadRenderer } from '../../../src/actors/render/renderer.js';
import { slotPath } from '../../../src/actors/render/inflight.js';
import { RenderSandbox } from '../../../src/actors/render/sandbox.js';
import { V8_MAX_ARRAY_LENGTH, V8_MAX_STRING_LENGTH } from '@sluice/jsonnet';
import { BatchRenderer, type RenderGuard, type RenderJob, type RenderOwner } from '../../../src/pipeline/batch-render.js';
import { compileMapping, createRecordContext } from '../../../src/pipeline/columns/index.js';
import { MappingCache } from '../../../src/pipeline/mapping-cache.js';
import { checkFilter, compileFilter, FilterError } from '../../../src/pipeline/record-filter.js';
import { FILTERED, withFilter } from '../../../src/pipeline/row-mapping.js';
import { failureKind } from '../../../src/observability/metrics.js';
import { findRejections } from '../../../src/sources/otlp/rejections.js';
import type { Column, MappingFilter, Sink } from '../../../src/model/definition.js';
import type { IngestRecord } from '../../../src/model/record.js';
import type { LoggedRecord } from '../../../src/ports/event-log.js';

const T0 = Date.parse('2026-11-27T10:00:00.000Z');

function record(n: number, body: unknown): IngestRecord {
  return { receivedAt: new Date(T0 + n * 1000), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify(body)), signal: '' };
}

const logged = (bodies: unknown[], from = 1): LoggedRecord[] => bodies.map((b, i) => ({ offset: from + i, record: record(i, b) }));
const jsonnet = (content: string): MappingFilter => ({ language: 'jsonnet', content });
const text = (csv: Uint8Array) => Buffer.from(csv).toString('utf8');
const owner: RenderOwner = { branchId: 1, sourceId: 'src', sinkId: 'snk', mode: 'stream' };

const idColumn: Column[] = [{ type: 'path', name: 'id', path: 'id' }];
/** Reads `level`: every record the filter lets through has one, the others would fail this column. */
const levelColumns: Column[] = [{ type: 'path', name: 'id', path: 'id' }, { type: 'path', name: 'level', path: 'level', rawString: true }];

describe('a filter in the batch renderer', () => {
  const engine = new SluiceTemplateEngine();

  it('maps the records it answers true for, skips those it answers false for, and fails the others with what the filter did', async () => {
    const records = logged([
      { id: 1, level: 'error' },
      { id: 2, level: 'debug' },
      { id: 3, level: 'error' },
      { id: 4, level: 'odd' },
      { id: 5 },
      { id: 6, level: 'debug' },
    ]);
    // true for errors, false for debug, a string for "odd", an error when `level` is missing.
    const filter = jsonnet('local l = Body("level"); if l == "error" then true else if l == "debug" then false else "maybe " + l');
    const [rows] = await new BatchRenderer(engine).render(records, [{ columns: levelColumns, filter, after: 0 }]);
    expect(text(rows.csv)).toBe('1,error\n3,error\n');
    expect(rows.count).toBe(2);
    expect([rows.firstIndex, rows.lastIndex]).toEqual([0, 2]);
    expect(rows.filtered).toEqual([1, 5]);
    expect(rows.failures).toEqual([
      { index: 3, reason: 'Filter returned "maybe odd", not true or false.', kind: 'filter' },
      { index: 4, reason: 'Filter failed: path "level" not found in the body.', kind: 'filter' },
    ]);
    // The metrics' label of both, from the renderer's kind and from the reason as kept.
    for (const f of rows.failures) {
      expect(failureKind(f.reason, f.kind)).toBe('filter');
      expect(failureKind(f.reason)).toBe('filter');
    }
  });

  it('names a result that is not a boolean, cut when it is long, and an error the filter raises', async () => {
    const records = logged([{ id: 1, tags: Array.from({ length: 100 }, (_, i) => `tag-${i}`) }, { id: 2 }, { id: 3 }]);
    const [long] = await new BatchRenderer(engine).render(records.slice(0, 1), [{ columns: idColumn, filter: jsonnet('Body("tags")'), after: 0 }]);
    expect(long.failures[0].reason).toMatch(/^Filter returned \["tag-0","tag-1",.{60,}…, not true or false\.$/);
    expect(long.failures[0].reason.length).toBeLessThan(160);
    const [raised] = await new BatchRenderer(engine).render(records.slice(1), [
      { columns: idColumn, filter: jsonnet('if Body("id") == 2 then error "no twos" else null'), after: 0 },
    ]);
    expect(raised.failures).toEqual([
      { index: 0, reason: 'Filter failed: no twos.', kind: 'filter' },
      { index: 1, reason: 'Filter returned null, not true or false.', kind: 'filter' },
    ]);
    expect(raised.count).toBe(0);
    expect(raised.filtered).toEqual([]);
  });

  it('runs the columns only on the records it keeps: a column that would fail on a skipped record does not', async () => {
    const records = logged([{ id: 1 }, { id: 2, user: { name: 'ann' } }]);
    const columns: Column[] = [{ type: 'template', name: 'name', rawString: true, template: { language: 'jsonnet', content: 'Body("user.name")' } }];
    const [rows] = await new BatchRenderer(engine).render(records, [{ columns, filter: jsonnet('Body("user", null) != null'), after: 0 }]);
    expect(rows.failures).toEqual([]);
    expect(rows.filtered).toEqual([0]);
    expect(text(rows.csv)).toBe('ann\n');
  });

  it('keeps each job to its own filter: one sink skips what another maps, and a sink without a filter answers no `filtered`', async () => {
    const records = logged([{ id: 1, n: 1 }, { id: 2, n: 2 }, { id: 3, n: 3 }, { id: 4, n: 4 }]);
    const [even, odd, all] = await new BatchRenderer(engine).render(records, [
      { columns: idColumn, filter: jsonnet('Body("n") % 2 == 0'), after: 0 },
      { columns: idColumn, filter: jsonnet('Body("n") % 2 == 1'), after: 1 },
      { columns: idColumn, after: 0 },
    ]);
    expect(text(even.csv)).toBe('2\n4\n');
    expect(even.filtered).toEqual([0, 2]);
    // After offset 1: record 1 is not the job's at all (neither mapped nor filtered).
    expect(text(odd.csv)).toBe('3\n');
    expect(odd.filtered).toEqual([1, 3]);
    expect(text(all.csv)).toBe('1\n2\n3\n4\n');
    expect(all).not.toHaveProperty('filtered');
  });

  it('evaluates the filter under the in-flight mark, as templates (a filter runs Jsonnet); built-in columns alone are not marked', async () => {
    const chunks: number[][] = [];
    const guard: RenderGuard = { enter: (_o, offsets) => chunks.push([...offsets]), leave: () => undefined };
    const renderer = new BatchRenderer(engine, guard);
    const records = logged([{ id: 1 }, { id: 2 }, { id: 3 }]);
    await renderer.render(records, [{ columns: idColumn, after: 0, owner }]);
    expect(chunks).toEqual([]);
    await renderer.render(records, [{ columns: idColumn, filter: jsonnet('Body("id") != 2'), after: 0, owner }]);
    expect(chunks.flat()).toEqual([1, 2, 3]);
  });

  it('answers a filter that does not compile as the job\'s error, like columns that do not compile', async () => {
    const [broken, fine] = await new BatchRenderer(engine).render(logged([{ id: 1 }]), [
      { columns: idColumn, filter: jsonnet('Body('), after: 0 },
      { columns: idColumn, after: 0 },
    ]);
    expect(broken.error).toMatch(/^Filter is invalid: /);
    expect(broken.count).toBe(0);
    expect(text(fine.csv)).toBe('1\n');
  });

  it('renders the same on a render thread as in place (the filter crosses to the thread with its job)', async () => {
    const renderer = new WorkerRenderer();
    try {
      const records = logged([{ id: 1, ok: true }, { id: 2, ok: false }, { id: 3, ok: 'yes' }, { id: 4, ok: true }]);
      const jobs: RenderJob[] = [{ columns: idColumn, filter: jsonnet('Body("ok")'), after: 0 }, { columns: idColumn, after: 2 }];
      const expected = await new InThreadRenderer(engine).render(records, jobs);
      const got = await renderer.render(records, jobs);
      expect(got.map((r) => ({ ...r, csv: text(r.csv) }))).toEqual(expected.map((r) => ({ ...r, csv: text(r.csv) })));
      expect(got[0].filtered).toEqual([1]);
      expect(got[0].failures.map((f) => f.reason)).toEqual(['Filter returned "yes", not true or false.']);
    } finally {
      await renderer.close();
    }
  });
});

describe('a filter that ends the process or its thread', () => {
  it('is parked as the record\'s failure like a template (the in-flight marks cover it); the rest of the batch is filtered and mapped', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-filter-'));
    // The test worker ends its thread when a Jsonnet evaluation meets `"die": true` (test/support/dying-render-worker.ts).
    const renderer = new WorkerRenderer({ slotPath: (thread) => slotPath(dataDir, thread), script: () => typeScriptWorker(new URL('../../support/dying-render-worker.ts', import.meta.url)) });
    try {
      const records = logged([{ id: 1, keep: true }, { id: 2, keep: false }, { id: 3, keep: true, die: true }, { id: 4, keep: true }]);
      const [rows] = await renderer.render(records, [{ columns: idColumn, filter: jsonnet('Body("keep")'), after: 0, owner }]);
      expect(rows.failures).toEqual([{ index: 2, kind: 'stopped', reason: expect.stringMatching(/^The mapping of this record stopped the render worker/) }]);
      expect(rows.filtered).toEqual([1]);
      expect(text(rows.csv)).toBe('1\n4\n');
    } finally {
      await renderer.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('is tried apart with the filter in the sandbox before a reprocess maps it', async () => {
    // Only the child's heap (64 MB) can stop the big record: the engine's own ceilings are lifted.
    const sandbox = new RenderSandbox({ heapLimitMb: 64, limits: { timeoutMs: 600_000, maxArrayLength: V8_MAX_ARRAY_LENGTH, maxStringLength: V8_MAX_STRING_LENGTH, maxAllocationBytes: 2 ** 50 } });
    const records = logged([{ id: 1, n: 3 }, { id: 2, n: 100_000_000 }]);
    const filter = jsonnet('std.length(std.join(",", ["x" for i in std.range(1, Body("n"))])) > 0');
    const parked = await sandbox.probe(records, { columns: idColumn, filter, after: 0, owner: { ...owner, mode: 'replay' } });
    expect(parked.map((p) => p.offset)).toEqual([2]);
  }, 90_000);
});

describe('a sink without a filter pays nothing for filters', () => {
  it('is its compiled columns themselves: no wrapper, still synchronous', async () => {
    const engine = new SluiceTemplateEngine();
    const mapping = await compileMapping(idColumn, engine);
    expect(withFilter(mapping, undefined)).toBe(mapping);
    expect(withFilter(mapping, await compileFilter(jsonnet('true'), engine)).isSync).toBe(false);
    const cache = new MappingCache(engine);
    const sink = { branchId: 1, sourceId: 's', sinkId: 'k', version: { number: 1, hash: 'h' }, table: { mapping: { columns: idColumn } } } as unknown as Sink;
    const cached = await cache.get(sink);
    expect(cached.isSync).toBe(true);
    expect(cached.constructor.name).toBe(mapping.constructor.name);
  });
});

describe('a filter for one record (the test endpoint, verbose ingestion, OTLP rejections)', () => {
  const engine = new SluiceTemplateEngine();

  it('answers FILTERED, the row, or rejects with the filter\'s failure', async () => {
    const mapping = withFilter(await compileMapping(idColumn, engine), await compileFilter(jsonnet('Body("keep", false)'), engine));
    expect(await mapping.render(createRecordContext(record(1, { id: 7, keep: true })))).toEqual(['7']);
    expect(await mapping.render(createRecordContext(record(1, { id: 7 })))).toBe(FILTERED);
    const failure = await mapping.render(createRecordContext(record(1, { id: 7, keep: 1 }))).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(FilterError);
    expect((failure as FilterError).message).toBe('Filter returned 1, not true or false.');
    expect(await mapping.renderMany([record(1, { id: 1, keep: true }), record(2, { id: 2 })].map(createRecordContext))).toEqual([['1'], FILTERED]);
  });

  it('OTLP: a record a sink\'s filter skips is not rejected; one its filter fails on is', async () => {
    const mapping = withFilter(await compileMapping([{ type: 'path', name: 'v', path: 'value' }], engine), await compileFilter(jsonnet('Body("keep")'), engine));
    const ctxs = [record(1, { keep: false }), record(2, { keep: true, value: 1 }), record(3, { keep: 'yes' })].map(createRecordContext);
    expect(await findRejections(ctxs, [{ sinkId: 'snk', mapping }])).toEqual({ rejected: 1, firstError: 'sink "snk": Filter returned "yes", not true or false.' });
  });

  it('checks a filter as the API does: the position of a syntax error, nothing for a valid one', async () => {
    expect(await checkFilter(jsonnet('Body("level") == "error"'), engine)).toBeUndefined();
    expect(await checkFilter(jsonnet('Invalid'), engine)).toBe('Filter is invalid: 1:1-8 Unknown variable: Invalid');
    await expect(compileFilter(jsonnet('Invalid'), engine)).rejects.toThrow('Filter is invalid: 1:1-8 Unknown variable: Invalid.');
  });
});
