import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InThreadRenderer, type RecordProber } from '../../../src/actors/render/renderer.js';
import { STOPPED_PROCESS_REASON } from '../../../src/actors/render/inflight.js';
import { SinkWriter } from '../../../src/actors/sink-writer/index.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import type { LoggedRecord } from '../../../src/ports/event-log.js';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import type { Column, Sink, Source } from '../../../src/model/definition.js';
import { createLogger } from '../../../src/logger.js';
import { FilesRepository } from '../../../src/levels/files-repository.js';
import { SinkPositions } from '../../../src/levels/positions.js';
import { MappingFailures, toFailureRecord } from '../../../src/levels/mapping-failures.js';
import { StatisticsService } from '../../../src/levels/statistics.js';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const key = { branchId: 1, sourceId: 'src', sinkId: 'snk' };
const version = (n: number) => ({ number: n, hash: `h${n}`, description: '', at: new Date(T0).toISOString(), by: { type: 'user' } });
const source = { ...key, projectId: 1, name: 'src', description: '', type: 'http', secret: 's', version: version(1) } as unknown as Source;
const sinkWith = (columns: Column[], n: number) =>
  ({ ...key, projectId: 1, name: 'snk', description: '', type: 'table', table: { type: 'keboola', tableId: 'in.c-b.t', mapping: { columns } }, version: version(n) }) as unknown as Sink;

const ID: Column[] = [{ type: 'path', name: 'id', path: 'id' }];
const ID_AND_NAME: Column[] = [...ID, { type: 'path', name: 'name', path: 'name', rawString: true }];
const batch: LoggedRecord[] = [1, 2, 3].map((n) => ({
  offset: n,
  record: { receivedAt: new Date(T0 + n), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify({ id: n, name: `n${n}` })), signal: '' },
}));

let dir: string;
let store: LmdbMetadataStore;
let writer: SinkWriter;
const renderer = new InThreadRenderer(new SluiceTemplateEngine());

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-sink-writer-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
});

afterEach(async () => {
  await writer?.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(sink: Sink, renderBudgetMs?: number, prober?: RecordProber): { levels: FilesRepository } {
  const levels = new FilesRepository(store);
  writer = new SinkWriter(sink, source, 0, {
    renderBudgetMs,
    prober,
    store, files: levels, positions: new SinkPositions(store), failures: new MappingFailures(store), renderer, dataDir: dir, logger: createLogger('silent'),
    limits: { uploadMinIntervalMs: 10_000, importMinIntervalMs: 60_000, maxSlices: 100 },
    sinkRetry: { attempts: 3, baseMs: 1 },
  });
  return { levels };
}

const sliceText = (levels: FilesRepository) => readFileSync(join(dir, levels.writingSlice(key)!.localPath), 'utf8');

describe('SinkWriter', () => {
  it('writes the rows rendered for the job it gave, and commits the offsets they cover', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const job = await writer.prepare();
    expect(job).toMatchObject({ columns: ID, after: 0, file: levels.writingFile(key)!.openedAt });
    // Rows as the router hands them: written as they are, not rendered again.
    const rendered = { csv: Buffer.from('x\ny\n'), count: 2, firstIndex: 0, lastIndex: 2, failures: [{ index: 1, reason: 'nope' }] };
    await writer.deliver(batch, rendered, job, 3);
    expect(sliceText(levels)).toBe('x\ny\n');
    expect(levels.writingSlice(key)).toMatchObject({ recordsCount: 2, firstRecordAt: new Date(T0 + 1).toISOString(), lastRecordAt: new Date(T0 + 3).toISOString() });
    expect(writer.committedOffset).toBe(3);
    expect(new MappingFailures(store).all(key).map((f) => [f.offset, f.reason])).toEqual([[2, 'nope']]);
  });

  it('renders the batch again when the file rotated after the router asked (the rows must fit the new columns)', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const job = await writer.prepare();
    const [stale] = await renderer.render(batch, [job]);
    expect(Buffer.from(stale.csv).toString()).toBe('1\n2\n3\n');
    // The mapping changes before the batch arrives: the file rotates to the new columns.
    writer.send({ type: 'reload', sink: sinkWith(ID_AND_NAME, 2), source } as never);
    await writer.deliver(batch, stale, job, 3);
    const file = levels.writingFile(key)!;
    expect(file.openedAt).not.toBe(job.file);
    expect(file.columns).toEqual(ID_AND_NAME);
    expect(sliceText(levels)).toBe('1,n1\n2,n2\n3,n3\n');
    expect(writer.committedOffset).toBe(3);
  });

  it('rotates at once a file it resumes that was opened with an earlier definition (a stop between a definition change and its rotation)', async () => {
    // The first writer opens the file with the first mapping, writes to it, and stops before any reload.
    const { levels } = start(sinkWith(ID, 1));
    const job = await writer.prepare();
    const [rendered] = await renderer.render(batch, [job]);
    await writer.deliver(batch, rendered, job, 3);
    const first = levels.writingFile(key)!;
    await writer.stop();
    // The next writer starts with the changed mapping (the definition was saved before the stop).
    start(sinkWith(ID_AND_NAME, 2));
    const next = await writer.prepare();
    const files = levels.listFiles(key);
    expect(files.find((f) => f.openedAt === first.openedAt)?.state, 'the resumed file is closed: its rows get imported').toBe('closing');
    expect(next.file).not.toBe(first.openedAt);
    expect(next.columns).toEqual(ID_AND_NAME);
    expect(levels.writingFile(key)!.columns).toEqual(ID_AND_NAME);
    // The same definition resumes the same file: no rotation.
    await writer.stop();
    start(sinkWith(ID_AND_NAME, 2));
    expect((await writer.prepare()).file).toBe(next.file);
  });

  it('filters with the filter of its file: a changed filter rotates the file, the stale batch is rendered again, the skipped records are counted with the batch', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const job = await writer.prepare();
    expect(job).not.toHaveProperty('filter');
    const [stale] = await renderer.render(batch, [job]);
    const filtered = { ...sinkWith(ID, 2), table: { type: 'keboola', tableId: 'in.c-b.t', mapping: { columns: ID, filter: { language: 'jsonnet', content: 'Body("id") != 2' } } } } as Sink;
    writer.send({ type: 'reload', sink: filtered, source } as never);
    await writer.deliver(batch, stale, job, 3);
    const file = levels.writingFile(key)!;
    expect(file.openedAt).not.toBe(job.file);
    expect(file.filter).toEqual({ language: 'jsonnet', content: 'Body("id") != 2' });
    expect(sliceText(levels)).toBe('1\n3\n');
    expect(writer.committedOffset).toBe(3);
    expect(new StatisticsService(store).sinkFiltered(1, 'src', 'snk')).toBe(1);
    expect(new MappingFailures(store).all(key)).toEqual([]);
    expect(await writer.prepare()).toMatchObject({ filter: { language: 'jsonnet', content: 'Body("id") != 2' } });
  });

  it('fails the batch after its bounded retries when the columns of its file do not compile: the sink is failing, its position kept', async () => {
    start(sinkWith([{ type: 'template', name: 't', template: { language: 'jsonnet', content: '{' } }], 1));
    const job = await writer.prepare();
    const [rendered] = await renderer.render(batch, [job]);
    expect(rendered.error).toBeDefined();
    await expect(writer.deliver(batch, rendered, job, 3)).rejects.toThrow(/is failing: the columns of the sink's file do not compile/);
    expect(writer.committedOffset).toBe(0);
    expect(writer.failing).toMatchObject({ reason: expect.stringMatching(/do not compile/), retries: 0 });
    // Kept, so that a restart or a disable and enable resumes from the sink's own position.
    expect(store.get('storage/failing/1/src/snk')).toMatchObject({ reason: expect.stringMatching(/do not compile/) });
    // While failing, a write is tried once: it fails again, and the next retry is later.
    const before = writer.failing!.retryAt;
    await expect(writer.deliver(batch, rendered, job, 3)).rejects.toThrow(/is failing/);
    expect(writer.failing).toMatchObject({ retries: 1 });
    expect(writer.failing!.retryAt).toBeGreaterThan(before);
  });

  it('is healthy again after a write that works: the failing state and its marker end', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const job = await writer.prepare();
    const broken = { csv: new Uint8Array(0), count: 0, firstIndex: -1, lastIndex: -1, failures: [], error: 'rendering failed: boom' };
    await expect(writer.deliver(batch, broken, job, 3)).rejects.toThrow(/is failing: rendering failed: boom/);
    expect(writer.failing?.reason).toBe('rendering failed: boom');
    const [rendered] = await renderer.render(batch, [job]);
    await writer.deliver(batch, rendered, job, 3);
    expect(writer.failing).toBeUndefined();
    expect(store.get('storage/failing/1/src/snk')).toBeUndefined();
    expect(sliceText(levels)).toBe('1\n2\n3\n');
    expect(writer.committedOffset).toBe(3);
  });

  it('keeps the records parked for it as failures in the batch that reaches them, and goes past them', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const failures = new MappingFailures(store);
    store.transact((tx) => failures.park(tx, key, [{ offset: 2, reason: 'The mapping of this record stopped the process.' }]));
    const job = await writer.prepare();
    expect(job).toMatchObject({ parked: [{ offset: 2, reason: 'The mapping of this record stopped the process.' }], owner: { ...key, mode: 'stream' } });
    const [rendered] = await renderer.render(batch, [job]);
    await writer.deliver(batch, rendered, job, 3);
    expect(sliceText(levels)).toBe('1\n3\n');
    expect(writer.committedOffset).toBe(3);
    const kept = failures.all(key);
    expect(kept.map((f) => [f.offset, f.reason])).toEqual([[2, 'The mapping of this record stopped the process.']]);
    // The raw record is kept with it: it can be reprocessed.
    expect(JSON.parse(kept[0].record.body)).toEqual({ id: 2, name: 'n2' });
    expect(failures.parked(key, -1)).toEqual([]);
    expect((await writer.prepare()).parked).toBeUndefined();
  });

  it('writes a batch cut by its render budget up to the last record rendered; the rest comes with the next one', async () => {
    const { levels } = start(sinkWith([{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'std.foldl(function(a, b) a + b, std.range(0, 1e5), 0) + Body("id")' } }], 1), 1);
    const job = await writer.prepare();
    expect(job.budgetMs).toBe(1);
    const [first] = await renderer.render(batch, [job]);
    expect(first.cutAt).toBe(1);
    await writer.deliver(batch, first, job, 3);
    expect(writer.committedOffset).toBe(1);
    const next = await writer.prepare();
    const [second] = await renderer.render(batch, [next]);
    expect(second.cutAt).toBe(2);
    await writer.deliver(batch, second, next, 3);
    expect(writer.committedOffset).toBe(2);
    expect(levels.writingSlice(key)!.recordsCount + new MappingFailures(store).count(key)).toBe(2);
  });

  it('reprocesses a record whose mapping stopped the process only once the sandbox mapped it without dying', async () => {
    const asked: number[][] = [];
    const prober: RecordProber = {
      probe: async (records) => {
        asked.push(records.map((r) => r.offset));
        return [{ offset: 2, reason: 'The mapping of this record stopped the process that tried it apart (killed by SIGABRT).' }];
      },
    };
    const { levels } = start(sinkWith(ID, 1), undefined, prober);
    const failures = new MappingFailures(store);
    const kept = (offset: number, reason: string) => ({ offset, failedAt: new Date(T0).toISOString(), reason, record: toFailureRecord(batch[offset - 1].record) });
    store.transact((tx) => failures.add(tx, key, [kept(1, STOPPED_PROCESS_REASON), kept(2, STOPPED_PROCESS_REASON), kept(3, 'path "x" not found')]));
    expect(await writer.replay(batch)).toEqual({ reprocessed: 2, failed: 1 });
    // Only the records that stopped the process were tried apart.
    expect(asked).toEqual([[1, 2]]);
    expect(failures.all(key).map((f) => [f.offset, f.reason])).toEqual([[2, 'The mapping of this record stopped the process that tried it apart (killed by SIGABRT).']]);
    expect(sliceText(levels)).toBe('1\n3\n');
  });

  it('does not map again a record whose mapping stopped the process when it has no sandbox to try it in', async () => {
    const { levels } = start(sinkWith(ID, 1));
    const failures = new MappingFailures(store);
    store.transact((tx) => failures.add(tx, key, [{ offset: 2, failedAt: new Date(T0).toISOString(), reason: STOPPED_PROCESS_REASON, record: toFailureRecord(batch[1].record) }]));
    expect(await writer.replay([batch[1], batch[2]])).toEqual({ reprocessed: 1, failed: 1 });
    expect(failures.all(key).map((f) => [f.offset, f.reason])).toEqual([[2, STOPPED_PROCESS_REASON]]);
    expect(sliceText(levels)).toBe('3\n');
  });
});
