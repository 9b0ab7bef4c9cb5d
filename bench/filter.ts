/**
 * `npm run bench -- filter`: what a sink's record filter costs the render, on one core. The
 * batch renderer (pipeline/batch-render.ts) maps batches of 4 000 records for one sink of five
 * built-in columns; the baseline, in the same run, is the same sink without a filter. The
 * filter cases: one that keeps every record (the filter's whole cost: one Jsonnet evaluation
 * a record) and one that keeps a quarter (what a selective filter saves in columns and CSV).
 * Rounds alternate the cases, so that a machine busy with other work slows each alike.
 */
import { SluiceTemplateEngine } from '../src/adapters/jsonnet/sluice-engine.js';
import { BatchRenderer, type BatchRecord, type RenderJob } from '../src/pipeline/batch-render.js';
import type { Column } from '../src/model/definition.js';
import { median, round2 } from './util.js';

const BATCH = 4000;
const COLUMNS: Column[] = [
  { type: 'path', name: 'id', path: 'id', rawString: true },
  { type: 'path', name: 'level', path: 'level', rawString: true },
  { type: 'path', name: 'user', path: 'user.id' },
  { type: 'path', name: 'total', path: 'order.total' },
  { type: 'datetime', name: 'at' },
];

function batch(): BatchRecord[] {
  return Array.from({ length: BATCH }, (_, i) => ({
    offset: i + 1,
    record: {
      receivedAt: new Date(Date.UTC(2026, 10, 27) + i), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json' }, signal: '',
      body: Buffer.from(JSON.stringify({ id: `e-${i}`, level: i % 4 === 0 ? 'error' : 'info', user: { id: i, name: 'Ann' }, order: { total: i % 100, items: [1, 2, 3] } })),
    },
  }));
}

/** Records/s of the job over `seconds` (after a warm-up). */
async function rate(renderer: BatchRenderer, records: BatchRecord[], job: RenderJob, seconds: number): Promise<number> {
  for (let i = 0; i < 3; i++) await renderer.render(records, [job]);
  let n = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    await renderer.render(records, [job]);
    n += records.length;
  }
  return n / ((performance.now() - started) / 1000);
}

export async function filterBench(args: string[]): Promise<Record<string, unknown>> {
  const seconds = Number(args[args.indexOf('--seconds') + 1]) || 2;
  const rounds = Number(args[args.indexOf('--rounds') + 1]) || 5;
  const renderer = new BatchRenderer(new SluiceTemplateEngine());
  const records = batch();
  const cases: Record<string, RenderJob> = {
    none: { columns: COLUMNS, after: 0 },
    keepsAll: { columns: COLUMNS, filter: { language: 'jsonnet', content: 'Body("level") != "debug"' }, after: 0 },
    keepsQuarter: { columns: COLUMNS, filter: { language: 'jsonnet', content: 'Body("level") == "error"' }, after: 0 },
  };
  const rates: Record<string, number[]> = { none: [], keepsAll: [], keepsQuarter: [] };
  for (let r = 0; r < rounds; r++) {
    const order = Object.keys(cases);
    if (r % 2 === 1) order.reverse();
    for (const name of order) rates[name].push(await rate(renderer, records, cases[name], seconds));
    process.stdout.write(`round ${r + 1}/${rounds}: ${order.map((n) => `${n} ${rates[n][r].toFixed(0)}/s`).join(', ')}\n`);
  }
  const none = median(rates.none);
  const all = median(rates.keepsAll);
  const quarter = median(rates.keepsQuarter);
  return {
    rounds,
    noFilterRecordsPerSec: Math.round(none),
    filterKeepsAllRecordsPerSec: Math.round(all),
    filterKeepsAllVsNoFilter: round2(all / none),
    filterMicrosecondsPerRecord: round2(1e6 / all - 1e6 / none),
    filterKeepsQuarterRecordsPerSec: Math.round(quarter),
    filterKeepsQuarterVsNoFilter: round2(quarter / none),
  };
}
