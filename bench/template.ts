/**
 * `npm run bench -- template`: records/s of template columns on one core. Sluice compiles each
 * template once and evaluates it per record (a fresh record context each time, so the body is
 * parsed per record as in the pipeline). The baseline, in the same run, is libjsonnet
 * evaluating the same template over batches of records with std.map (its best case: one
 * evaluation per batch, Body() as a lookup in a pre-flattened object).
 */
import { createRequire } from 'node:module';
import { SluiceTemplateEngine } from '../src/adapters/jsonnet/sluice-engine.js';
import { createRecordContext } from '../src/pipeline/columns/index.js';
import type { IngestRecord } from '../src/model/record.js';
import { median, round2 } from './util.js';

// The package's types do not resolve under NodeNext (see test/support/libjsonnet-engine.ts): load it by require.
const { Jsonnet } = createRequire(import.meta.url)('@hanazuki/node-jsonnet') as {
  Jsonnet: new () => { evaluateSnippet(code: string): Promise<string> };
};

const TYPICAL = '{ id: Body("user.id"), name: std.asciiUpper(Body("user.name", "")), cents: Body("order.total", 0) * 100, page: "page:" + Body("context.page", "/") }';
const HEAVY = 'std.format("%s|%08.2f|%s|%s", [Body("user.id"), Body("order.total", 0), std.join(",", std.map(function(x) "#" + std.toString(x), Body("order.items", []))), std.join("-", std.split(Body("context.page", ""), "/"))])';

function body(i: number): string {
  return JSON.stringify({ event: 'purchase', user: { id: `u-${i}`, name: 'Ann Smith' }, order: { total: 12.5 + (i % 100), items: [1, 2, i % 7] }, context: { page: '/shop/checkout/step-2' } });
}

function record(i: number): IngestRecord {
  return { receivedAt: new Date(), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(body(i)), signal: '' };
}

/**
 * Records/s of one compiled template. `parsed`: the records' bodies are already parsed, as in
 * the pipeline, where one parse per record serves every column of every sink (and as the
 * libjsonnet baseline gets them pre-flattened); otherwise every evaluation parses a new body.
 */
async function sluiceRate(template: string, seconds: number, parsed: boolean): Promise<number> {
  const compiled = await new SluiceTemplateEngine().compile(template);
  const records = Array.from({ length: 1000 }, (_, i) => record(i));
  const contexts = records.map(createRecordContext);
  if (parsed) for (const c of contexts) await compiled.evaluate(c);
  let n = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  while (performance.now() < deadline) {
    for (let i = 0; i < 1000; i++) await compiled.evaluate(parsed ? contexts[i] : createRecordContext(records[i]));
    n += 1000;
  }
  return n / ((performance.now() - started) / 1000);
}

/** The same template for libjsonnet: Body(path, default) looks the path up in the record's flattened fields. */
function libjsonnetProgram(template: string, count: number): string {
  const recs = Array.from({ length: count }, (_, i) => {
    const o = JSON.parse(body(i));
    const flat: Record<string, unknown> = {};
    const walk = (v: unknown, p: string) => {
      flat[p] = v;
      if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(x, p === '' ? k : `${p}.${k}`);
    };
    walk(o, '');
    return flat;
  });
  return `local recs = ${JSON.stringify(recs)};
std.map(function(r)
  local Body(path, default=null) = if std.objectHas(r, path) then r[path] else default;
  ${template}, recs)`;
}

async function libjsonnetRate(template: string, batches: number): Promise<number> {
  const jsonnet = new Jsonnet();
  const code = libjsonnetProgram(template, 1000);
  await jsonnet.evaluateSnippet(code); // warm-up
  const started = performance.now();
  for (let b = 0; b < batches; b++) await jsonnet.evaluateSnippet(code);
  return (batches * 1000) / ((performance.now() - started) / 1000);
}

export async function templateBench(args: string[]): Promise<Record<string, unknown>> {
  const seconds = Number(args[args.indexOf('--seconds') + 1]) || 3;
  const rounds = Number(args[args.indexOf('--rounds') + 1]) || 3;
  const typical: number[] = [];
  const typicalFresh: number[] = [];
  const heavy: number[] = [];
  const libTypical: number[] = [];
  const libHeavy: number[] = [];
  for (let r = 0; r < rounds; r++) {
    typical.push(await sluiceRate(TYPICAL, seconds, true));
    typicalFresh.push(await sluiceRate(TYPICAL, seconds, false));
    libTypical.push(await libjsonnetRate(TYPICAL, 5));
    heavy.push(await sluiceRate(HEAVY, seconds, true));
    libHeavy.push(await libjsonnetRate(HEAVY, 5));
    process.stdout.write(
      `round ${r + 1}/${rounds}: typical ${typical[r].toFixed(0)}/s (with a fresh body parse ${typicalFresh[r].toFixed(0)}/s; libjsonnet ${libTypical[r].toFixed(0)}/s), heavy ${heavy[r].toFixed(0)}/s (libjsonnet ${libHeavy[r].toFixed(0)}/s)\n`,
    );
  }
  const t = median(typical);
  const h = median(heavy);
  return {
    rounds,
    typicalRecordsPerSec: Math.round(t),
    typicalWithBodyParseRecordsPerSec: Math.round(median(typicalFresh)),
    typicalLibjsonnetRecordsPerSec: Math.round(median(libTypical)),
    typicalVsLibjsonnet: round2(t / median(libTypical)),
    heavyRecordsPerSec: Math.round(h),
    heavyLibjsonnetRecordsPerSec: Math.round(median(libHeavy)),
    heavyVsLibjsonnet: round2(h / median(libHeavy)),
  };
}
