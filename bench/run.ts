/**
 * Benchmarks: `npm run bench -- <name> [options]`. Each prints human-readable lines and, last,
 * one JSON object with its results beside a baseline measured in the same run.
 */
import { startupBench } from './startup.js';
import { ingestBench } from './ingest.js';
import { templateBench } from './template.js';
import { filterBench } from './filter.js';
import { extractorBench } from './extractor.js';
import { otlpBench } from './otlp.js';
import { importBench } from './import.js';
import { e2eBench } from './e2e.js';
import { freshnessBench } from './freshness.js';
import { clientBench } from './client.js';

const BENCHES: Record<string, (args: string[]) => Promise<Record<string, unknown>>> = {
  startup: startupBench,
  ingest: ingestBench,
  template: templateBench,
  filter: filterBench,
  extractor: extractorBench,
  otlp: otlpBench,
  import: importBench,
  e2e: e2eBench,
  freshness: freshnessBench,
  client: clientBench,
};

const [name, ...args] = process.argv.slice(2);
const bench = name ? BENCHES[name] : undefined;
if (!bench) {
  process.stderr.write(`Usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [options]\n`);
  process.exit(name ? 1 : 0);
}
const result = await bench(args);
process.stdout.write(JSON.stringify({ bench: name, ...result }) + '\n');
