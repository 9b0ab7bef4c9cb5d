/**
 * Where a server's CPU went, by stage of the record's path: V8 CPU profiles (`node --cpu-prof`,
 * one file per thread: the main thread and each render worker) folded into the stages the
 * e2e bench reports, and the CPU of the threads no profile sees (libuv's pool, where gzip and
 * file writes run; DuckDB's threads; V8's helpers) from /proc.
 *
 * A sample's time goes to the stage of the nearest Sluice frame on its stack (the sample's own
 * function or the closest caller that is a file of dist/), so that library and native time
 * (protobufjs, lmdb, DuckDB's binding, JSON.parse) counts for the Sluice code that called it. A
 * stack with no Sluice frame falls outside the stages: garbage collection, `(program)` (V8 and
 * native work outside any JS function), Node's and the libraries' own event handling (HTTP
 * parsing, sockets, streams, timers). Idle time is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const STAGES = ['decode', 'log append', 'log read', 'routing', 'render', 'CSV', 'gzip', 'level bookkeeping', 'import'] as const;
export type Stage = (typeof STAGES)[number];

/** Sluice files (paths under dist/ or src/, without extension) → stage; the first match wins. */
const FILE_STAGES: Array<{ file: RegExp; stage: Stage | Outside; fn?: RegExp }> = [
  // decode: the request's bytes into records
  { file: /^sources\/otlp\/(decode|encode|schema|flatten|values|model|rejections|template-can-fail|body)$/, stage: 'decode' },
  { file: /^sources\/kafka-connect\/split$/, stage: 'decode' },
  // the event log: appends (ingestion side) and reads (the sinks' side)
  { file: /^adapters\/event-log\/lmdb-log$/, fn: /^(read|fetch|get record|headOffset|tailOffset)$/, stage: 'log read' },
  { file: /^adapters\/event-log\//, stage: 'log append' },
  { file: /^pipeline\/record-codec$/, fn: /^encode/, stage: 'log append' },
  { file: /^pipeline\/record-codec$/, stage: 'log read' },
  { file: /^sources\/ingest\/append$/, stage: 'log append' },
  // routing: the source router hands batches to the sinks' writers
  { file: /^actors\/source-router$/, stage: 'routing' },
  { file: /^actors\/sink-writer\/index$/, fn: /^(deliver|handle|accepts|open|prepare|askPrepare|currentJob)$/, stage: 'routing' },
  { file: /^pipeline\/seen-offsets$/, stage: 'routing' },
  // render: mapping records to cells (main thread or render worker)
  { file: /^pipeline\/csv-rows$/, stage: 'CSV' },
  { file: /^levels\/local$/, stage: 'CSV' },
  { file: /^pipeline\/(batch-render|mapping-cache|template-engine|headers|record)$/, stage: 'render' },
  { file: /^pipeline\/columns\//, stage: 'render' },
  { file: /^actors\/render\//, stage: 'render' },
  { file: /^jsonnet\//, stage: 'render' },
  { file: /^adapters\/jsonnet\//, stage: 'render' },
  // gzip: slices staged as gzip files
  { file: /^adapters\/staging\//, stage: 'gzip' },
  { file: /^levels\/staging$/, stage: 'gzip' },
  // import into the target
  { file: /^levels\/import$/, stage: 'import' },
  { file: /^adapters\/target\//, stage: 'import' },
  { file: /^(storage\/tables|ports\/target)$/, stage: 'import' },
  // bookkeeping of slices, files, positions and statistics
  { file: /^actors\/(sink-writer|level-operator)\//, stage: 'level bookkeeping' },
  { file: /^levels\//, stage: 'level bookkeeping' },
  { file: /^adapters\/metadata\//, stage: 'level bookkeeping' },
  // the rest of the request's way in: routes and the fast path (fastify's own code is a library)
  { file: /^(api|sources|http)\/|^wiring\/http-app$/, stage: 'http routes (outside)' },
];

/** What a stack with no stage is counted as. */
export type Outside = 'http routes (outside)' | 'other Sluice code (outside)';

export interface CallFrame {
  functionName: string;
  url: string;
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/** The stage of one frame, or undefined when the frame is not Sluice's (a library, Node, V8). */
export function frameStage(frame: CallFrame): Stage | Outside | undefined {
  const m = /\/(?:dist|src)\/(.+)\.[jt]s$/.exec(frame.url.replace(/^file:\/\//, ''));
  if (!m || m[1].startsWith('..') || frame.url.includes('/node_modules/')) return undefined;
  const file = m[1];
  for (const rule of FILE_STAGES) {
    if (rule.file.test(file) && (!rule.fn || rule.fn.test(frame.functionName))) return rule.stage;
  }
  return 'other Sluice code (outside)';
}

/**
 * A stack without a Sluice frame, by its own function: V8's pseudo-frames, else the library or
 * Node module the sample was in (`node and libraries (outside): fastify`, `...: node:internal/streams`).
 */
function outsideOf(frame: CallFrame): string {
  switch (frame.functionName) {
    case '(idle)':
      return 'idle';
    case '(garbage collector)':
      return 'gc (outside)';
    case '(program)':
      return 'program (outside)';
    default: {
      const lib = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(frame.url)?.[1] ?? /^(node:internal\/[^/]+|node:[^/]+)/.exec(frame.url)?.[1] ?? (frame.url ? 'other' : `V8 builtin ${frame.functionName || '(anonymous)'}`);
      return `node and libraries (outside): ${lib}`;
    }
  }
}

/**
 * Microseconds of CPU per stage in one profile. A sample's weight is the time to the next
 * sample (as DevTools counts it); the last sample gets the mean interval.
 */
export function foldProfile(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const children = new Set(profile.nodes.flatMap((n) => n.children ?? []));
  // The nearest Sluice stage of every node, top-down: its own frame's, else its caller's.
  const nearest = new Map<number, Stage | Outside | undefined>();
  const stack: Array<[number, Stage | Outside | undefined]> = profile.nodes.filter((n) => !children.has(n.id)).map((n) => [n.id, undefined]);
  while (stack.length > 0) {
    const [id, inherited] = stack.pop()!;
    const node = byId.get(id)!;
    const own = frameStage(node.callFrame) ?? inherited;
    nearest.set(id, own);
    for (const c of node.children ?? []) stack.push([c, own]);
  }
  const totals = new Map<string, number>();
  const { samples, timeDeltas } = profile;
  const mean = samples.length > 1 ? timeDeltas.slice(1).reduce((a, b) => a + b, 0) / (samples.length - 1) : 0;
  for (let i = 0; i < samples.length; i++) {
    const weight = i + 1 < samples.length ? timeDeltas[i + 1] : mean;
    const node = byId.get(samples[i]);
    if (!node) continue;
    const stage: string = nearest.get(node.id) ?? outsideOf(node.callFrame);
    if (stage === 'idle') continue;
    totals.set(stage, (totals.get(stage) ?? 0) + Math.max(0, weight));
  }
  return totals;
}

/** Every `.cpuprofile` of a folder folded and summed; also how many threads they cover. */
export function foldProfiles(dir: string): { totals: Map<string, number>; threads: number } {
  const totals = new Map<string, number>();
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  for (const f of files) {
    for (const [stage, us] of foldProfile(JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile)) {
      totals.set(stage, (totals.get(stage) ?? 0) + us);
    }
  }
  return { totals, threads: files.length };
}

/**
 * µs per record for each stage, the listed stages first (0 when absent), then what fell outside,
 * largest first; outside entries under `minMicros` a record are summed into one.
 */
export function perRecord(totals: Map<string, number>, records: number, minMicros = 0.1): Record<string, number> {
  const out: Record<string, number> = {};
  const round = (us: number) => Math.round((us / records) * 1000) / 1000;
  for (const s of STAGES) out[s] = round(totals.get(s) ?? 0);
  let rest = 0;
  for (const [k, us] of [...totals].filter(([k]) => !(STAGES as readonly string[]).includes(k)).sort((a, b) => b[1] - a[1])) {
    if (us / records >= minMicros) out[k] = round(us);
    else rest += us;
  }
  if (rest > 0) out['node and libraries (outside): the rest'] = round(rest);
  return out;
}
