/**
 * GET /search/jobs: multi-valued filters, time ranges, paging and sorting over
 * the stored jobs. Pure: takes the jobs and the query, returns the page.
 */
import { QueueError } from './errors.js';
import { durationSeconds } from './job-json.js';
import type { Job } from './job-model.js';

export type SearchQuery = Record<string, string | string[] | undefined>;

/** Filter name (and its aliases) -> the job's value it compares with. */
const EQUALS: Record<string, (j: Job) => string | null> = {
  id: (j) => j.id,
  runId: (j) => j.runId,
  branchId: (j) => j.branchId,
  tokenId: (j) => j.token.id,
  tokenDescription: (j) => j.token.description,
  componentId: (j) => j.component,
  component: (j) => j.component,
  configId: (j) => j.config,
  config: (j) => j.config,
  mode: (j) => j.mode,
  status: (j) => j.status,
  type: () => 'standard',
  parentRunId: (j) => j.parentRunId,
};

const RANGES: Record<string, (j: Job) => number | null> = {
  createdTime: (j) => Date.parse(j.createdTime),
  startTime: (j) => (j.startTime ? Date.parse(j.startTime) : null),
  endTime: (j) => (j.endTime ? Date.parse(j.endTime) : null),
};

const SORTABLE: Record<string, (j: Job) => number | string> = {
  id: (j) => Number(j.id),
  runId: (j) => j.runId,
  createdTime: (j) => j.createdTime,
  startTime: (j) => j.startTime ?? '',
  endTime: (j) => j.endTime ?? '',
  durationSeconds: (j) => durationSeconds(j),
  status: (j) => j.status,
  component: (j) => j.component,
  componentId: (j) => j.component,
  config: (j) => j.config ?? '',
  configId: (j) => j.config ?? '',
};

/** `status[]=a&status[]=b`, `status=a` -> {status: ["a", "b"]}; "[]" suffixes removed. */
export function normaliseQuery(query: SearchQuery): Record<string, string[]> {
  // No prototype: a key such as `__proto__` is a key like any other (unknown, so ignored).
  const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const [rawKey, raw] of Object.entries(query)) {
    if (raw === undefined) continue;
    const key = rawKey.replace(/\[\d*\]$/, '');
    out[key] = [...(out[key] ?? []), ...(Array.isArray(raw) ? raw : [raw])];
  }
  return out;
}

function single(q: Record<string, string[]>, key: string): string | undefined {
  const v = q[key];
  return v === undefined || v.length === 0 ? undefined : v[v.length - 1];
}

function nonNegativeInt(q: Record<string, string[]>, key: string, fallback: number): number {
  const raw = single(q, key);
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new QueueError('invalid', `Invalid "${key}": expected a non-negative integer, got "${raw}".`);
  return Number(raw);
}

function time(raw: string, key: string): number {
  // PHP strtotime formats: ISO dates and times, and Unix timestamps prefixed by "@".
  const ms = raw.startsWith('@') ? Number(raw.slice(1)) * 1000 : Date.parse(raw);
  if (!Number.isFinite(ms)) throw new QueueError('invalid', `Invalid "${key}": "${raw}" is not a date or time.`);
  return ms;
}

export function searchJobs(jobs: Job[], query: SearchQuery): Job[] {
  const q = normaliseQuery(query);
  const predicates: ((j: Job) => boolean)[] = [];
  for (const [key, values] of Object.entries(q)) {
    // Own keys only: `__proto__` (a query key like any other) must not find Object.prototype.
    const field = Object.hasOwn(EQUALS, key) ? EQUALS[key] : undefined;
    if (field) {
      const wanted = new Set(values);
      // branchId "null" means the main branch.
      predicates.push((j) => wanted.has(field(j) ?? 'null'));
    }
  }
  if (q.configRowIds) {
    const wanted = new Set(q.configRowIds);
    predicates.push((j) => j.configRowIds.some((r) => wanted.has(r)));
  }
  for (const [name, field] of Object.entries(RANGES)) {
    const from = single(q, `${name}From`);
    const to = single(q, `${name}To`);
    if (from !== undefined) {
      const t = time(from, `${name}From`);
      predicates.push((j) => (field(j) ?? -Infinity) >= t);
    }
    if (to !== undefined) {
      const t = time(to, `${name}To`);
      predicates.push((j) => (field(j) ?? Infinity) <= t);
    }
  }
  const durationFrom = single(q, 'durationSecondsFrom');
  const durationTo = single(q, 'durationSecondsTo');
  if (durationFrom !== undefined) predicates.push((j) => durationSeconds(j) >= Number(durationFrom));
  if (durationTo !== undefined) predicates.push((j) => durationSeconds(j) <= Number(durationTo));

  const sortBy = single(q, 'sortBy') ?? 'id';
  const sortKey = Object.hasOwn(SORTABLE, sortBy) ? SORTABLE[sortBy] : undefined;
  if (!sortKey) throw new QueueError('invalid', `Invalid "sortBy": "${sortBy}". Use one of ${Object.keys(SORTABLE).join(', ')}.`);
  const sortOrder = single(q, 'sortOrder') ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw new QueueError('invalid', `Invalid "sortOrder": "${sortOrder}". Use "asc" or "desc".`);
  const offset = nonNegativeInt(q, 'offset', 0);
  const limit = Math.min(nonNegativeInt(q, 'limit', 100), 500);

  const direction = sortOrder === 'asc' ? 1 : -1;
  return jobs
    .filter((j) => predicates.every((p) => p(j)))
    .sort((a, b) => {
      const x = sortKey(a);
      const y = sortKey(b);
      const c = x < y ? -1 : x > y ? 1 : Number(a.id) - Number(b.id);
      return c * direction;
    })
    .slice(offset, offset + limit);
}
