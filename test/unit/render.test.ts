import { afterEach, describe, expect, it, vi } from 'vitest';
import { InThreadRenderer, type RecordRenderer } from '../../src/actors/render/renderer.js';
import { WorkerRenderer } from '../../src/actors/render/worker-renderer.js';
import { SluiceTemplateEngine } from '../../src/connectors/jsonnet/sluice-engine.js';
import type { LoggedRecord } from '../../src/connectors/event-log/event-log.js';
import type { Column } from '../../src/model/definition.js';
import { BatchRenderer, type RenderJob } from '../../src/pipeline/batch-render.js';
import * as columns from '../../src/pipeline/columns/index.js';
import { csvRows } from '../../src/pipeline/csv-rows.js';
import type { IngestRecord } from '../../src/pipeline/record.js';
import { encodeRecord } from '../../src/pipeline/record-codec.js';

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
    const thread = (workers as unknown as { worker: { terminate(): Promise<number> } }).worker;
    // Stopped before the batch is posted, so the thread can never answer it (no race with a fast render).
    const stopping = thread.terminate();
    const inFlight = workers.render(batch, [{ columns: idName, after: 0 }]);
    await stopping;
    await expect(inFlight).rejects.toThrow(/render worker exited/);
    const [again] = await workers.render(batch, [{ columns: idName, after: 0 }]);
    expect(again.count).toBe(3);
  });

  it("evaluates templates under the limits it is given, as the server's other template engines", async () => {
    const range: Column[] = [{ type: 'template', name: 'n', template: { language: 'jsonnet', content: 'std.length(std.range(1, Body("id")))' } }];
    const records: LoggedRecord[] = [
      { offset: 1, record: record(1, '{"id":5}') },
      { offset: 2, record: record(2, '{"id":1000000000}') },
    ];
    renderer = new WorkerRenderer({ maxArrayLength: 10, limitNames: { maxArrayLength: '--template-max-array-length' } });
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
