import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { slotPath } from '../../../src/actors/render/inflight.js';
import { InThreadRenderer, type RecordRenderer } from '../../../src/actors/render/renderer.js';
import { typeScriptWorker, WorkerRenderer } from '../../../src/actors/render/worker-renderer.js';
import { RenderSandbox } from '../../../src/actors/render/sandbox.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { V8_MAX_ARRAY_LENGTH, V8_MAX_STRING_LENGTH, type LimitOptions } from '@sluice/jsonnet';
import type { LoggedRecord } from '../../../src/ports/event-log.js';
import type { Column } from '../../../src/model/definition.js';
import { BatchRenderer, type RenderGuard, type RenderJob, type RenderOwner } from '../../../src/pipeline/batch-render.js';
import * as columns from '../../../src/pipeline/columns/index.js';
import { csvRows } from '../../../src/pipeline/csv-rows.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { encodeRecord } from '../../../src/pipeline/record-codec.js';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const json = { 'Content-Type': 'application/json' };

function record(n: number, body: string, signal: IngestRecord['signal'] = '', headers: Record<string, string> = json): IngestRecord {
  return { receivedAt: new Date(T0 + n * 1000), ip: '10.0.0.1', headers, body: Buffer.from(body), signal };
}

const batch: LoggedRecord[] = [
  { offset: 11, record: record(1, '{"id":1,"name":"a, \\"quoted\\""}') },
  { offset: 12, record: record(2, '{"id":2}') },
  { offset: 13, record: record(3, 'not json') },
  { offset: 14, record: record(4, '{"id":4,"name":"d"}', 'logs') },
  { offset: 15, record: record(5, '{"id":5,"name":"e\\nnext"}') },
];

const idName: Column[] = [
  { type: 'path', name: 'id', path: 'id' },
  { type: 'path', name: 'name', path: 'name', rawString: true },
  { type: 'datetime', name: 'at' },
];
const template: Column[] = [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("id") * 10' } }];

const text = (csv: Uint8Array) => Buffer.from(csv).toString('utf8');
const owner = (sinkId: string): RenderOwner => ({ branchId: 1, sourceId: 'src', sinkId, mode: 'stream' });
/** A template that takes tens of milliseconds per record (the engine's time budget is 100 ms). */
const slow: Column[] = [{ type: 'template', name: 's', template: { language: 'jsonnet', content: 'std.foldl(function(a, b) a + b, std.range(0, 2e5), 0) + Body("id")' } }];
const numbered = (count: number, from = 1): LoggedRecord[] =>
  Array.from({ length: count }, (_, k) => ({ offset: from + k, record: record(k, JSON.stringify({ id: from + k, name: `n${from + k}` })) }));

/** A guard that remembers its marks: every chunk entered, and whether a mark is still in flight. */
function spyGuard(): RenderGuard & { chunks: number[][]; inFlight: boolean; leaves: number } {
  const guard = {
    chunks: [] as number[][],
    inFlight: false,
    leaves: 0,
    enter(_owner: RenderOwner, offsets: readonly number[]) {
      guard.chunks.push([...offsets]);
      guard.inFlight = true;
    },
    leave() {
      guard.inFlight = false;
      guard.leaves++;
    },
  };
  return guard;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-render-'));
  dirs.push(dir);
  return dir;
}

describe('BatchRenderer', () => {
  it('renders each job only for records after its offset and of its signals, as CSV with failures by index', async () => {
    const renderer = new BatchRenderer(new SluiceTemplateEngine());
    const [all, late, httpOnly] = await renderer.render(batch, [
      { columns: idName, after: 0 },
      { columns: idName, after: 13 },
      { columns: template, after: 0, allowedSignals: ['metrics'] },
    ]);

    expect(all.count).toBe(3);
    expect([all.firstIndex, all.lastIndex]).toEqual([0, 4]);
    expect(text(all.csv)).toBe(
      csvRows([
        ['1', 'a, "quoted"', '2026-11-21T10:00:01.000Z'],
        ['4', 'd', '2026-11-21T10:00:04.000Z'],
        ['5', 'e\nnext', '2026-11-21T10:00:05.000Z'],
      ]),
    );
    // Record 2 has no "name", record 3 no JSON body: kept as failures, with the reason.
    expect(all.failures.map((f) => f.index)).toEqual([1, 2]);
    expect(all.failures[0].reason).toMatch(/name/);
    expect(all.failures[1].reason).toMatch(/invalid JSON/);

    expect(late.count).toBe(2);
    expect([late.firstIndex, late.lastIndex]).toEqual([3, 4]);

    // A sink of metrics takes HTTP records ('' signal) but not the logs record.
    expect(httpOnly.count).toBe(3);
    expect(text(httpOnly.csv)).toBe('10\n20\n50\n');
    expect(httpOnly.failures.map((f) => f.index)).toEqual([2]);
  });

  it('parses each body once for all jobs', async () => {
    const parse = vi.spyOn(columns, 'parseBody');
    const created = vi.spyOn(columns, 'createRecordContext');
    const renderer = new BatchRenderer(new SluiceTemplateEngine());
    await renderer.render(batch, [
      { columns: idName, after: 0 },
      { columns: idName, after: 0 },
    ]);
    // One context per record, shared by both jobs (parseBody is called inside it, once per record).
    expect(created).toHaveBeenCalledTimes(batch.length);
    expect(parse.mock.calls.length).toBeLessThanOrEqual(batch.length);
    vi.restoreAllMocks();
  });

  it('renders a large batch slice by slice into the same rows, failures and cut as one pass would give', async () => {
    // 1 000 records (slices of 256): every seventh has no "name", the job `late` starts mid-slice.
    const records: LoggedRecord[] = Array.from({ length: 1000 }, (_, k) => ({
      offset: k + 1,
      record: record(k, JSON.stringify(k % 7 === 3 ? { id: k } : { id: k, name: `n${k}` })),
    }));
    const renderer = new BatchRenderer(new SluiceTemplateEngine());
    const [all, late, templated] = await renderer.render(records, [
      { columns: idName, after: 0 },
      { columns: idName, after: 300 },
      { columns: template, after: 0 },
    ]);
    const kept = records.map((_, k) => k).filter((k) => k % 7 !== 3);
    expect(all.count).toBe(kept.length);
    expect(text(all.csv)).toBe(csvRows(kept.map((k) => [String(k), `n${k}`, new Date(T0 + k * 1000).toISOString()])));
    expect(all.failures.map((f) => f.index)).toEqual(records.map((_, k) => k).filter((k) => k % 7 === 3));
    expect([all.firstIndex, all.lastIndex]).toEqual([0, 999]);
    expect([late.firstIndex, late.lastIndex, late.count]).toEqual([300, 999, kept.filter((k) => k >= 300).length]);
    expect(text(templated.csv)).toBe(records.map((_, k) => `${k * 10}\n`).join(''));

    // A budget spent in a later slice cuts there: the rows before it are all there, in order.
    const slowAfter400: Column[] = [
      { type: 'template', name: 's', template: { language: 'jsonnet', content: 'if Body("id") < 400 then Body("id") else std.foldl(function(a, b) a + b, std.range(0, 5e4), 0) * 0 + Body("id")' } },
    ];
    const [cut] = await renderer.render(records, [{ columns: slowAfter400, after: 0, budgetMs: 100, owner: owner('slow') }]);
    expect(cut.cutAt).toBeGreaterThan(400);
    expect(cut.cutAt).toBeLessThan(1000);
    // (A slow record may fail on the engine's own time budget on a loaded machine: a failure, not a row.)
    const failed = new Set(cut.failures.map((f) => f.index));
    expect([...failed].every((k) => k >= 400)).toBe(true);
    expect(text(cut.csv)).toBe(records.slice(0, cut.cutAt).map((_, k) => (failed.has(k) ? '' : `${k}\n`)).join(''));
  });

  it('answers a job whose columns do not compile with an error, and still renders the others', async () => {
    const renderer = new BatchRenderer(new SluiceTemplateEngine());
    const bad: Column[] = [{ type: 'template', name: 'bad', template: { language: 'jsonnet', content: '{' } }];
    const [broken, fine] = await renderer.render(batch, [
      { columns: bad, after: 0 },
      { columns: idName, after: 0 },
    ]);
    expect(broken.error).toMatch(/template is invalid/);
    expect(broken.count).toBe(0);
    expect(fine.count).toBe(3);
  });

  it('answers parked records as failures with their reason, without mapping them, in batch order among the others', async () => {
    const evaluated: string[] = [];
    const engine = new SluiceTemplateEngine();
    const spying = {
      check: (c: string) => engine.check(c),
      compile: async (c: string) => {
        const t = await engine.compile(c);
        return { evaluate: (r: Parameters<typeof t.evaluate>[0]) => (evaluated.push(r.bodyString()), t.evaluate(r)) };
      },
    };
    const renderer = new BatchRenderer(spying);
    const [rows] = await renderer.render(batch, [{ columns: template, after: 0, parked: [{ offset: 14, reason: 'it stopped the process' }] }]);
    expect(rows.count).toBe(3);
    expect(text(rows.csv)).toBe('10\n20\n50\n');
    expect(rows.failures.map((f) => [f.index, f.kind])).toEqual([[2, 'invalidBody'], [3, 'stopped']]);
    expect(rows.failures[1].reason).toBe('it stopped the process');
    // The parked record's template never ran.
    expect(evaluated.some((b) => b.includes('"id":4'))).toBe(false);
  });

  it('stops a job whose budget ran out after the chunk that crossed it, leaving the rest (cutAt), and renders the other jobs whole', async () => {
    const renderer = new BatchRenderer(new SluiceTemplateEngine());
    const records = numbered(6, 100);
    const [cut, whole] = await renderer.render(records, [
      { columns: slow, after: 0, budgetMs: 1, owner: owner('slow'), parked: [{ offset: 105, reason: 'parked' }] },
      { columns: idName, after: 0, budgetMs: 1 },
    ]);
    // A slow template maps one record per chunk: the first one crossed the budget (mapped, or
    // failed on the engine's own time budget on a loaded machine).
    expect(cut.cutAt).toBe(1);
    expect(cut.count + cut.failures.length).toBe(1);
    // A parked record after the cut is answered with the rest, by a later call.
    expect(cut.failures.some((f) => f.reason === 'parked')).toBe(false);
    // Built-in columns do bounded work per record: no budget applies.
    expect(whole.count).toBe(6);
    expect(whole.cutAt).toBeUndefined();
    // Without a budget a job is rendered whole.
    const [all] = await renderer.render(records.slice(0, 3), [{ columns: slow, after: 0, owner: owner('slow') }]);
    expect([all.count + all.failures.length, all.cutAt]).toEqual([3, undefined]);
  });

  it('marks the records its templates map, in chunks that start at one record and grow while they are quick (at most 64) and stay single while slow; built-in columns and jobs without an owner are not marked', async () => {
    const guard = spyGuard();
    const renderer = new BatchRenderer(new SluiceTemplateEngine(), guard);
    const records = numbered(200);
    await renderer.render(records, [{ columns: template, after: 0, owner: owner('quick') }]);
    // One mark a chunk (the next replaces it), cleared once at the job's end.
    expect(guard.inFlight).toBe(false);
    expect(guard.leaves).toBe(1);
    expect(guard.chunks.flat()).toEqual(records.map((r) => r.offset));
    expect(Math.max(...guard.chunks.map((c) => c.length))).toBeLessThanOrEqual(64);
    expect(guard.chunks[0]).toEqual([1]);
    expect(guard.chunks.length).toBeLessThan(20);
    // Each batch starts with a chunk of one: a record that kills at once shares its chunk only
    // with records mapped quickly just before it.
    guard.chunks.length = 0;
    await renderer.render(numbered(3, 201), [{ columns: template, after: 0, owner: owner('quick') }]);
    expect(guard.chunks).toEqual([[201], [202, 203]]);

    guard.chunks.length = 0;
    await renderer.render(numbered(3, 300), [{ columns: slow, after: 0, owner: owner('slow') }]);
    expect(guard.chunks).toEqual([[300], [301], [302]]);

    guard.chunks.length = 0;
    await renderer.render(records, [
      { columns: idName, after: 0, owner: owner('plain') },
      { columns: template, after: 0 },
    ]);
    expect(guard.chunks).toEqual([]);
  });
});

describe('WorkerRenderer', () => {
  let renderer: RecordRenderer | undefined;
  afterEach(async () => {
    await renderer?.close();
    renderer = undefined;
  });

  it('renders on its thread exactly what the in-thread renderer renders, from decoded or encoded records', async () => {
    renderer = new WorkerRenderer();
    const encoded: LoggedRecord[] = batch.map((r) => ({ offset: r.offset, record: r.record, encoded: encodeRecord(r.record) }));
    const jobs: RenderJob[] = [
      { columns: idName, after: 0 },
      { columns: template, after: 12 },
    ];
    const expected = await new InThreadRenderer(new SluiceTemplateEngine()).render(batch, jobs);
    const fromRecords = await renderer.render(batch, jobs);
    const fromEncoded = await renderer.render(encoded, jobs);
    for (const got of [fromRecords, fromEncoded]) {
      expect(got.map((r) => ({ ...r, csv: text(r.csv) }))).toEqual(expected.map((r) => ({ ...r, csv: text(r.csv) })));
    }
  });

  it('keeps up with batches in flight at once, each answered with its own rows', async () => {
    renderer = new WorkerRenderer();
    const many = Array.from({ length: 20 }, (_, k) =>
      renderer!.render([{ offset: k, record: record(k, JSON.stringify({ id: k, name: `n${k}` })) }], [{ columns: idName, after: -1 }]),
    );
    const results = await Promise.all(many);
    results.forEach(([r], k) => expect(text(r.csv)).toBe(csvRows([[String(k), `n${k}`, new Date(T0 + k * 1000).toISOString()]])));
  });

  it('fails the batches in flight when its thread dies, and renders the next batch on a new thread', async () => {
    const workers = new WorkerRenderer();
    renderer = workers;
    await workers.render(batch, [{ columns: idName, after: 0 }]);
    const thread = (workers as unknown as { threads: Map<string, { worker: { terminate(): Promise<number> } }> }).threads.get('shared')!.worker;
    // Stopped before the batch is posted, so the thread can never answer it (no race with a fast render).
    const stopping = thread.terminate();
    const inFlight = workers.render(batch, [{ columns: idName, after: 0 }]);
    await stopping;
    await expect(inFlight).rejects.toThrow(/render worker exited/);
    const [again] = await workers.render(batch, [{ columns: idName, after: 0 }]);
    expect(again.count).toBe(3);
  });

  it('renders each lane on its own thread: a long render apart does not hold one of the shared lane', async () => {
    const workers = new WorkerRenderer();
    renderer = workers;
    // Both threads started first.
    await Promise.all([workers.render(batch, [{ columns: idName, after: 0 }], 'apart'), workers.render(batch, [{ columns: idName, after: 0 }], 'shared')]);
    let apartDone = false;
    const apart = workers.render(numbered(20), [{ columns: slow, after: 0 }], 'apart').then((r) => {
      apartDone = true;
      return r;
    });
    const [shared] = await workers.render(batch, [{ columns: idName, after: 0 }], 'shared');
    expect(shared.count).toBe(3);
    expect(apartDone).toBe(false);
    const [slowRows] = await apart;
    expect(slowRows.count + slowRows.failures.length).toBe(20);
  });

  it('parks the records that end its thread (found one by one on a thread of their own), renders the rest of their batch and the batches in flight with it', async () => {
    const dataDir = tempDir();
    const workers = new WorkerRenderer({ slotPath: (thread) => slotPath(dataDir, thread), script: () => typeScriptWorker(new URL('../../support/dying-render-worker.ts', import.meta.url)) });
    renderer = workers;
    const records = numbered(10);
    records[6] = { offset: 7, record: record(7, JSON.stringify({ id: 7, name: 'n7', die: true })) };
    const innocent = workers.render(numbered(3, 50), [{ columns: template, after: 0, owner: owner('other') }]);
    const [rows, plain] = await workers.render(records, [
      { columns: template, after: 0, owner: owner('dying') },
      { columns: idName, after: 0, owner: owner('plain') },
    ]);
    expect(rows.failures).toEqual([{ index: 6, kind: 'stopped', reason: expect.stringMatching(/^The mapping of this record stopped the render worker \(render worker exited \(code 9\)\)/) }]);
    expect(rows.count).toBe(9);
    expect(text(rows.csv)).toBe([1, 2, 3, 4, 5, 6, 8, 9, 10].map((n) => `${n * 10}\n`).join(''));
    expect(plain.count).toBe(10);
    expect((await innocent)[0].count).toBe(3);
    // The probe's thread and its slot are gone; the lane's slot is idle.
    expect(readdirSync(join(dataDir, 'inflight')).filter((f) => f.startsWith('render-probe'))).toEqual([]);
  });

  it('fails the batch when its thread dies outside a template (nothing marked), so that the writer retries it', async () => {
    const dataDir = tempDir();
    const workers = new WorkerRenderer({ slotPath: (thread) => slotPath(dataDir, thread), script: () => typeScriptWorker(new URL('../../support/dying-render-worker.ts', import.meta.url)) });
    renderer = workers;
    const records = numbered(3);
    records[1] = { offset: 2, record: record(2, JSON.stringify({ id: 2, die: true })) };
    // No owner: nothing is marked, so the death names no record.
    await expect(workers.render(records, [{ columns: template, after: 0 }])).rejects.toThrow(/render worker exited \(code 9\)/);
    const [again] = await workers.render(numbered(3), [{ columns: template, after: 0 }]);
    expect(again.count).toBe(3);
  });

  it("evaluates templates under the limits it is given, as the server's other template engines", async () => {
    const range: Column[] = [{ type: 'template', name: 'n', template: { language: 'jsonnet', content: 'std.length(std.range(1, Body("id")))' } }];
    const records: LoggedRecord[] = [
      { offset: 1, record: record(1, '{"id":5}') },
      { offset: 2, record: record(2, '{"id":1000000000}') },
    ];
    renderer = new WorkerRenderer({ limits: { maxArrayLength: 10, limitNames: { maxArrayLength: '--template-max-array-length' } } });
    const [small] = await renderer.render(records.slice(0, 1), [{ columns: range, after: 0 }]);
    expect(text(small.csv)).toBe('5\n');
    const [limited] = await renderer.render([{ offset: 3, record: record(3, '{"id":11}') }], [{ columns: range, after: 0 }]);
    expect(limited.failures.map((f) => f.reason)).toEqual(['Invalid value for column "n": array length 11 exceeds the limit of 10 elements (--template-max-array-length).']);
    // With the defaults, the one event fails its record on the worker thread instead of aborting it.
    const defaults = new WorkerRenderer();
    try {
      const [one] = await defaults.render(records, [{ columns: range, after: 0 }]);
      expect(one.count).toBe(1);
      expect(one.failures.map((f) => f.reason)).toEqual(['Invalid value for column "n": array length 1000000000 exceeds the limit of 10000000 elements (--template-max-array-length).']);
    } finally {
      await defaults.close();
    }
  });

  it('refuses work once closed', async () => {
    const closed = new WorkerRenderer();
    await closed.close();
    await expect(closed.render(batch, [{ columns: idName, after: 0 }])).rejects.toThrow(/closed/);
  });
});

describe('RenderSandbox', () => {
  const joined: Column[] = [{ type: 'template', name: 'xs', template: { language: 'jsonnet', content: 'std.length(std.join(",", ["x" for i in std.range(1, Body("n"))]))' } }];
  const records: LoggedRecord[] = [
    { offset: 1, record: record(1, '{"n":3}') },
    { offset: 2, record: record(2, '{"n":100000000}') },
    { offset: 3, record: record(3, '{"n":5}') },
  ];
  const job: RenderJob = { columns: joined, after: 0, budgetMs: 1, owner: { branchId: 1, sourceId: 'src', sinkId: 'snk', mode: 'replay' } };
  // The engine's ceilings, so that only the child's heap (64 MB) can stop the big record.
  const unbounded: LimitOptions = { timeoutMs: 600_000, maxArrayLength: V8_MAX_ARRAY_LENGTH, maxStringLength: V8_MAX_STRING_LENGTH, maxAllocationBytes: 2 ** 50 };

  it('maps records one at a time in a child process and answers those that end it, parked with the reason; the others map there without harm', async () => {
    const sandbox = new RenderSandbox({ heapLimitMb: 64, limits: unbounded });
    const parked = await sandbox.probe(records, job);
    expect(parked.map((p) => p.offset)).toEqual([2]);
    expect(parked[0].reason).toMatch(/^The mapping of this record stopped the process that tried it apart \((exit code|killed by).*\)\. It is not mapped again unless reprocessed\.$/);
  }, 90_000);

  it("evaluates under the server's template limits: there the big record fails its mapping and ends nothing", async () => {
    const sandbox = new RenderSandbox({ heapLimitMb: 64, limits: { ...unbounded, maxArrayLength: 10 } });
    expect(await sandbox.probe(records, job)).toEqual([]);
  }, 90_000);
});
