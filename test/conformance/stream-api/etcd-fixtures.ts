/**
 * Fixture loader of the Stream API suite: a scenario with an `initial-etcd-kvs.txt` starts from
 * state that the reference kept in etcd (files, slices and their statistics) before its first
 * step. The reference's runner put those keys into etcd and then started its API component only
 * (no writer, no operator). This module maps the keys to Sluice's own level state
 * (src/levels: file and slice entries, the statistics archive) and writes it into the
 * metadata store of a data directory before the service starts on it; the service's statistics
 * code then reads it like any state the record's path wrote.
 *
 * The reference's keys (keboola-as-code's stream service, its etcd schema):
 *
 *   storage/file/all/<p>/<b>/<source>/<sink>/<fileOpenedAt>                           a file
 *   storage/slice/all/<p>/<b>/<source>/<sink>/<fileOpenedAt>/<volume>/<sliceOpenedAt>  a slice
 *   storage/file/level/<level>/..., storage/slice/level/<level>/...                    their level indexes
 *   storage/stats/<level>/<p>/<b>/<source>/<sink>/<fileOpenedAt>/<volume>/<sliceOpenedAt>/<node>
 *       a slice's statistics at a level, one value per source node (`value`, `_open`, a node id)
 *   storage/stats/<level>/<object key>/_sum     the statistics of an object's deleted children
 *   storage/stats/<level>/<object key>/~reset   statistics a reset subtracts
 *
 * and what they become:
 *
 * - A file (`storage/file/all`) is a FileEntry with its state, state times and retry fields, its
 *   mapping's columns and the table id when the value has one (`target.keboola.tableId`; the
 *   reference keeps it on the sink). Its settings snapshot is empty (the defaults): a file's
 *   settings matter only while it is the sink's writing file, and the loader never makes one
 *   (the writing file and slice of a sink, and its log offsets, are the runtime's own: it opens
 *   them when the scenario creates or enables the sink).
 * - A slice's statistics at a level are one SliceEntry in a state of that level (Sluice computes
 *   a level from the slice state: local = writing/closing/uploading, staging = uploaded,
 *   target = imported): the state of its `storage/slice/all` entry when that is of the same
 *   level, otherwise `closing`, `uploaded` or `imported`. The values of its source nodes are
 *   summed. Sluice has no volumes: a slice id is its open time within the file, so a slice whose
 *   time is taken (the same time on another volume, or the same slice at a second level) gets the
 *   next free millisecond (invisible to the API, which shows no slice ids). A slice without
 *   statistics keys is a slice of no records marked `noStatistics` (as the reference, the files
 *   listing shows no statistics for a file of only such slices, or of no slice); an `_open` value
 *   is an open slice of no records, with statistics (`total: null`).
 * - `_sum` of a file or slice counts as one more slice of that file at that level; `_sum` of a
 *   sink at the target level is the sink's statistics archive (the target statistics of
 *   imported files that retention deleted). Sums above a sink and sums of a sink at the local or
 *   staging level have no counterpart in Sluice, which keeps statistics per sink: they are
 *   refused, as is `~reset` (Sluice records a reset as a time, DELETE .../statistics/clear, not as
 *   a sum to subtract).
 * - The level indexes repeat the `all` entries (the reference's statistics read `all`; where
 *   the two differ, `all` is what it shows): ignored. So are the staging file records and sink
 *   tokens (`storage/keboola/`) and runtime keys (`runtime/`: locks, node registrations), which
 *   mean nothing to a fresh service, and keys of another project. Any other key (definitions,
 *   tasks) is refused: definitions come from the scenario's own requests.
 *
 * Times are normalised to Sluice's ISO form (`2000-01-01T02:00:00.000Z`); sizes may be numbers
 * or datasize strings (`"1MB"`, 1024-based).
 */
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import type { MetadataStore } from '../../../src/ports/metadata-store.js';
import type { Column } from '../../../src/model/definition.js';
import { parseByteSize } from '../../../src/pipeline/units.js';
import { localSlicePath } from '../../../src/model/levels.js';
import {
  levelKeys,
  type ArchivedStatistics,
  type FileEntry,
  type FileState,
  type Retry,
  type SinkKey,
  type SliceEntry,
  type SliceState,
} from '../../../src/model/levels.js';
import type { Level } from '../../../src/levels/statistics.js';

/** A fixture that cannot be loaded as it is; the message names the key. */
export class EtcdFixtureError extends Error {
  override name = 'EtcdFixtureError';
}

export interface EtcdKv {
  key: string;
  value: string;
}

/** What a fixture becomes in Sluice's metadata store. */
export interface LevelFixture {
  files: FileEntry[];
  slices: SliceEntry[];
  /** Statistics archives (levelKeys.statsArchive) by sink. */
  archives: Array<{ sink: SinkKey; statistics: ArchivedStatistics }>;
  /** Keys that were read but mean nothing to Sluice's state, each with the reason. */
  ignored: Array<{ key: string; reason: string }>;
}

// ---------------------------------------------------------------------------------------------
// The snapshot text

const BEGIN = '<<<<<';
const SEPARATOR = '-----';
const END = '>>>>>';

/**
 * Parses the reference's etcd snapshot text (etcdhelper's format): blocks of
 * `<<<<<` / key / `-----` / value lines / `>>>>>`, blank lines between them. A key given twice
 * keeps its last value, as puts in that order would.
 */
export function parseEtcdSnapshot(text: string): EtcdKv[] {
  const lines = text.split(/\r?\n/);
  const byKey = new Map<string, string>();
  let i = 0;
  const where = (n: number) => `line ${n + 1}`;
  while (i < lines.length) {
    if (lines[i].trim() === '') {
      i++;
      continue;
    }
    if (lines[i].trim() !== BEGIN) throw new EtcdFixtureError(`${where(i)}: expected "${BEGIN}", got ${JSON.stringify(lines[i])}`);
    const key = (lines[i + 1] ?? '').trim();
    if (key === '' || key === SEPARATOR) throw new EtcdFixtureError(`${where(i + 1)}: expected a key after "${BEGIN}"`);
    if ((lines[i + 2] ?? '').trim() !== SEPARATOR) throw new EtcdFixtureError(`${where(i + 2)}: expected "${SEPARATOR}" after the key ${key}`);
    let j = i + 3;
    const value: string[] = [];
    while (j < lines.length && lines[j].trim() !== END) value.push(lines[j++]);
    if (j >= lines.length) throw new EtcdFixtureError(`the value of ${key} has no closing "${END}"`);
    byKey.delete(key); // a later put moves the key to the end, as the order of the input
    byKey.set(key, value.join('\n'));
    i = j + 1;
  }
  return [...byKey].map(([key, value]) => ({ key, value }));
}

// ---------------------------------------------------------------------------------------------
// Keys to Sluice's level state

const FILE_STATES: readonly FileState[] = ['writing', 'closing', 'importing', 'imported'];
const SLICE_STATES: readonly SliceState[] = ['writing', 'closing', 'uploading', 'uploaded', 'imported'];
const LEVELS: readonly Level[] = ['local', 'staging', 'target'];
const LEVEL_OF: Record<SliceState, Level> = { writing: 'local', closing: 'local', uploading: 'local', uploaded: 'staging', imported: 'target' };
/** The state of a slice known only from statistics of a level: closed, not the writing one. */
const STATE_OF: Record<Level, SliceState> = { local: 'closing', staging: 'uploaded', target: 'imported' };

const SUM = '_sum';
const RESET = '~reset';

interface Stats {
  recordsCount: number;
  uncompressedSize: number;
  compressedSize: number;
  firstRecordAt?: string;
  lastRecordAt?: string;
}

interface SliceId extends SinkKey {
  projectId: number;
  fileOpenedAt: string;
  /** The reference's volume ('' for a file's `_sum`), which Sluice has not. */
  volume: string;
  openedAt: string;
}

type Json = Record<string, unknown>;

/**
 * Maps the keys of a fixture (placeholders already replaced) to Sluice's level state of the
 * project `projectId` (the service's). Pure: nothing is written. Throws EtcdFixtureError for a
 * key or value it cannot map.
 */
export function mapEtcdFixture(kvs: readonly EtcdKv[], options: { projectId: number }): LevelFixture {
  const ignored: LevelFixture['ignored'] = [];
  const files = new Map<string, FileEntry>();
  const sliceMeta = new Map<string, { id: SliceId; value: Json }>();
  /** Statistics by slice and level: the sum of its source nodes' values (and `_sum`s). */
  const sliceStats = new Map<string, { id: SliceId; levels: Map<Level, Stats> }>();
  const archives = new Map<string, { sink: SinkKey; statistics: Stats }>();

  for (const { key, value } of kvs) {
    const parts = key.split('/');
    if (key.startsWith('storage/file/level/') || key.startsWith('storage/slice/level/')) {
      ignored.push({ key, reason: 'a level index of the entry under storage/<file|slice>/all, which is what the statistics read' });
      continue;
    }
    if (key.startsWith('storage/keboola/')) {
      ignored.push({ key, reason: 'a staging file record or sink token of the reference\'s Keboola bridge; Sluice has no counterpart to load' });
      continue;
    }
    if (key.startsWith('runtime/')) {
      ignored.push({ key, reason: 'runtime coordination (locks, nodes): nothing of it outlives the reference\'s process' });
      continue;
    }
    if (key.startsWith('storage/file/all/')) {
      const [p, b, sourceId, sinkId, openedAt, ...rest] = parts.slice(3);
      if (rest.length > 0 || openedAt === undefined) throw new EtcdFixtureError(`${key}: expected storage/file/all/<project>/<branch>/<source>/<sink>/<fileOpenedAt>`);
      const sink = sinkOf(key, p, b, sourceId, sinkId);
      if (sink.projectId !== options.projectId) {
        ignored.push({ key, reason: `project ${sink.projectId}, not the service's ${options.projectId}` });
        continue;
      }
      const file = fileEntry(key, sink, isoTime(key, openedAt), jsonObject(key, value));
      files.set(fileId(file, file.openedAt), file);
      continue;
    }
    if (key.startsWith('storage/slice/all/')) {
      const [p, b, sourceId, sinkId, fileOpenedAt, volume, openedAt, ...rest] = parts.slice(3);
      if (rest.length > 0 || openedAt === undefined) {
        throw new EtcdFixtureError(`${key}: expected storage/slice/all/<project>/<branch>/<source>/<sink>/<fileOpenedAt>/<volume>/<sliceOpenedAt>`);
      }
      const sink = sinkOf(key, p, b, sourceId, sinkId);
      if (sink.projectId !== options.projectId) {
        ignored.push({ key, reason: `project ${sink.projectId}, not the service's ${options.projectId}` });
        continue;
      }
      const id: SliceId = { ...sink, fileOpenedAt: isoTime(key, fileOpenedAt), volume, openedAt: isoTime(key, openedAt) };
      sliceMeta.set(sliceIdKey(id), { id, value: jsonObject(key, value) });
      continue;
    }
    if (key.startsWith('storage/stats/')) {
      const level = parts[2] as Level;
      if (!LEVELS.includes(level)) throw new EtcdFixtureError(`${key}: unknown statistics level "${parts[2]}" (local, staging or target)`);
      const object = parts.slice(3, -1);
      const name = parts[parts.length - 1];
      if (object.length < 4) {
        throw new EtcdFixtureError(`${key}: statistics above a sink (of a project, branch or source) have no counterpart in Sluice, which keeps them per sink`);
      }
      const [p, b, sourceId, sinkId, fileOpenedAt, volume, sliceOpenedAt] = object;
      const sink = sinkOf(key, p, b, sourceId, sinkId);
      if (sink.projectId !== options.projectId) {
        ignored.push({ key, reason: `project ${sink.projectId}, not the service's ${options.projectId}` });
        continue;
      }
      if (name === RESET) {
        throw new EtcdFixtureError(`${key}: a reset sum is not supported: Sluice records a statistics reset as a time (DELETE .../statistics/clear), not as statistics to subtract`);
      }
      const stats = statsValue(key, jsonObject(key, value));
      if (object.length === 4) {
        if (name !== SUM) throw new EtcdFixtureError(`${key}: expected ${SUM} or ${RESET} after the sink's key`);
        if (level !== 'target') {
          throw new EtcdFixtureError(`${key}: a sink's sum of deleted ${level} statistics has no counterpart in Sluice (it archives the statistics of imported files only)`);
        }
        const id = sinkPathKey(sink);
        const previous = archives.get(id);
        archives.set(id, { sink: plainSink(sink), statistics: previous ? addStats(previous.statistics, stats) : stats });
        continue;
      }
      let id: SliceId;
      if (object.length === 5 && name === SUM) {
        // The file's deleted slices: one more slice of the file.
        const at = isoTime(key, fileOpenedAt);
        id = { ...sink, fileOpenedAt: at, volume: '', openedAt: at };
      } else if (object.length === 7) {
        id = { ...sink, fileOpenedAt: isoTime(key, fileOpenedAt), volume, openedAt: isoTime(key, sliceOpenedAt) };
      } else {
        throw new EtcdFixtureError(
          `${key}: expected storage/stats/<level>/<project>/<branch>/<source>/<sink>/<fileOpenedAt>/<volume>/<sliceOpenedAt>/<node>, or ${SUM} after a sink, file or slice`);
      }
      const k = sliceIdKey(id);
      let entry = sliceStats.get(k);
      if (!entry) sliceStats.set(k, (entry = { id, levels: new Map() }));
      const previous = entry.levels.get(level);
      entry.levels.set(level, previous ? addStats(previous, stats) : stats);
      continue;
    }
    throw new EtcdFixtureError(
      `${key}: not supported by the fixture loader (it loads files, slices and their statistics; definitions come from the scenario's requests)`);
  }

  return {
    files: [...files.values()].sort((a, b) => cmp(fileId(a, a.openedAt), fileId(b, b.openedAt))),
    slices: sliceEntries(sliceMeta, sliceStats),
    archives: [...archives.values()].map(({ sink, statistics }) => ({ sink, statistics: archived(statistics) })),
    ignored,
  };
}

/** The slice entries of the fixture's slices and statistics, with unique ids (see the module's comment). */
function sliceEntries(
  meta: Map<string, { id: SliceId; value: Json }>,
  stats: Map<string, { id: SliceId; levels: Map<Level, Stats> }>,
): SliceEntry[] {
  const ids = new Map<string, SliceId>();
  for (const [k, { id }] of meta) ids.set(k, id);
  for (const [k, { id }] of stats) ids.set(k, id);
  const order = (id: SliceId) => `${fileId(id, id.fileOpenedAt)}/${id.openedAt}/${id.volume}`;
  const taken = new Set<string>();
  const out: SliceEntry[] = [];
  for (const [k, id] of [...ids].sort(([, a], [, b]) => cmp(order(a), order(b)))) {
    const m = meta.get(k);
    const key = `${fileId(id, id.fileOpenedAt)}/${id.volume}/${id.openedAt}`;
    const state = m ? sliceState(key, m.value) : undefined;
    const levels = stats.get(k)?.levels;
    const parts: Array<{ state: SliceState; stats?: Stats }> = levels && levels.size > 0
      ? LEVELS.filter((l) => levels.has(l)).map((l) => ({ state: state !== undefined && LEVEL_OF[state] === l ? state : STATE_OF[l], stats: levels.get(l) }))
      : [{ state: state ?? 'closing' }];
    for (const part of parts) {
      let openedAt = id.openedAt;
      while (taken.has(`${fileId(id, id.fileOpenedAt)}/${openedAt}`)) openedAt = new Date(Date.parse(openedAt) + 1).toISOString();
      taken.add(`${fileId(id, id.fileOpenedAt)}/${openedAt}`);
      out.push(sliceEntry(key, id, openedAt, part.state, m?.value, part.stats));
    }
  }
  return out;
}

function sliceEntry(key: string, id: SliceId, openedAt: string, state: SliceState, meta: Json | undefined, stats: Stats | undefined): SliceEntry {
  const sliceKey = { branchId: id.branchId, sourceId: id.sourceId, sinkId: id.sinkId, fileOpenedAt: id.fileOpenedAt, openedAt };
  const entry: SliceEntry = {
    projectId: id.projectId,
    ...sliceKey,
    state,
    localPath: localSlicePath(sliceKey),
    uncompressedSize: stats?.uncompressedSize ?? 0,
    compressedSize: stats?.compressedSize ?? 0,
    recordsCount: stats?.recordsCount ?? 0,
  };
  if (stats === undefined) entry.noStatistics = true;
  if (stats?.firstRecordAt !== undefined) entry.firstRecordAt = stats.firstRecordAt;
  if (stats?.lastRecordAt !== undefined) entry.lastRecordAt = stats.lastRecordAt;
  if (meta) {
    for (const field of ['closingAt', 'uploadingAt', 'uploadedAt', 'importedAt'] as const) {
      const t = optionalTime(key, meta, field);
      if (t !== undefined) entry[field] = t;
    }
    Object.assign(entry, retryOf(key, meta));
  }
  return entry;
}

function fileEntry(key: string, sink: SinkKey & { projectId: number }, openedAt: string, value: Json): FileEntry {
  const state = value.state;
  if (typeof state !== 'string' || !(FILE_STATES as readonly string[]).includes(state)) {
    throw new EtcdFixtureError(`${key}: "state" must be one of ${FILE_STATES.join(', ')}, got ${JSON.stringify(state)}`);
  }
  const mapping = value.mapping as { columns?: unknown } | undefined;
  const columns = mapping?.columns ?? value.columns ?? [];
  if (!Array.isArray(columns)) throw new EtcdFixtureError(`${key}: "mapping.columns" must be an array`);
  const target = value.target as { keboola?: { tableId?: unknown } } | undefined;
  const tableId = target?.keboola?.tableId ?? value.tableId ?? '';
  const file: FileEntry = {
    ...sink,
    openedAt,
    state: state as FileState,
    tableId: String(tableId),
    columns: columns as Column[],
    settings: [],
  };
  for (const field of ['closingAt', 'importingAt', 'importedAt'] as const) {
    const t = optionalTime(key, value, field);
    if (t !== undefined) file[field] = t;
  }
  return Object.assign(file, retryOf(key, value));
}

function sliceState(key: string, value: Json): SliceState {
  const state = value.state;
  if (typeof state !== 'string' || !(SLICE_STATES as readonly string[]).includes(state)) {
    throw new EtcdFixtureError(`${key}: "state" must be one of ${SLICE_STATES.join(', ')}, got ${JSON.stringify(state)}`);
  }
  return state as SliceState;
}

function retryOf(key: string, value: Json): Retry {
  const retry: Retry = {};
  if (value.retryAttempt !== undefined) {
    if (!Number.isSafeInteger(value.retryAttempt) || (value.retryAttempt as number) < 0) {
      throw new EtcdFixtureError(`${key}: "retryAttempt" must be a non-negative integer`);
    }
    retry.retryAttempt = value.retryAttempt as number;
  }
  if (value.retryReason !== undefined) retry.retryReason = String(value.retryReason);
  for (const field of ['firstFailedAt', 'lastFailedAt', 'retryAfter'] as const) {
    const t = optionalTime(key, value, field);
    if (t !== undefined) retry[field] = t;
  }
  return retry;
}

/** A statistics value: counts, sizes (numbers or datasize strings), first and last record times ("" = none). */
function statsValue(key: string, value: Json): Stats {
  if (value.reset === true) {
    throw new EtcdFixtureError(`${key}: a reset value is not supported: Sluice records a statistics reset as a time, not as statistics to subtract`);
  }
  const count = value.recordsCount ?? 0;
  if (!Number.isSafeInteger(count) || (count as number) < 0) throw new EtcdFixtureError(`${key}: "recordsCount" must be a non-negative integer`);
  const stats: Stats = {
    recordsCount: count as number,
    uncompressedSize: byteSize(key, value, 'uncompressedSize'),
    compressedSize: byteSize(key, value, 'compressedSize'),
  };
  const first = optionalTime(key, value, 'firstRecordAt');
  const last = optionalTime(key, value, 'lastRecordAt');
  if (first !== undefined) stats.firstRecordAt = first;
  if (last !== undefined) stats.lastRecordAt = last;
  return stats;
}

function byteSize(key: string, value: Json, field: string): number {
  const v = value[field];
  if (v === undefined || v === null || v === '') return 0;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? parseByteSize(v) : undefined;
  if (n === undefined || !Number.isSafeInteger(n) || n < 0) throw new EtcdFixtureError(`${key}: "${field}" must be a byte size like 100B or 5MB, got ${JSON.stringify(v)}`);
  return n;
}

function addStats(a: Stats, b: Stats): Stats {
  const out: Stats = {
    recordsCount: a.recordsCount + b.recordsCount,
    uncompressedSize: a.uncompressedSize + b.uncompressedSize,
    compressedSize: a.compressedSize + b.compressedSize,
  };
  const first = [a.firstRecordAt, b.firstRecordAt].filter((t): t is string => t !== undefined).sort()[0];
  const last = [a.lastRecordAt, b.lastRecordAt].filter((t): t is string => t !== undefined).sort().pop();
  if (first !== undefined) out.firstRecordAt = first;
  if (last !== undefined) out.lastRecordAt = last;
  return out;
}

function archived(s: Stats): ArchivedStatistics {
  const out: ArchivedStatistics = { recordsCount: s.recordsCount, compressedSize: s.compressedSize, uncompressedSize: s.uncompressedSize };
  if (s.firstRecordAt !== undefined) out.firstRecordAt = s.firstRecordAt;
  if (s.lastRecordAt !== undefined) out.lastRecordAt = s.lastRecordAt;
  return out;
}

function sinkOf(key: string, p: string | undefined, b: string | undefined, sourceId: string | undefined, sinkId: string | undefined): SinkKey & { projectId: number } {
  const int = (s: string | undefined, what: string) => {
    if (s === undefined || !/^\d+$/.test(s)) throw new EtcdFixtureError(`${key}: the ${what} id must be a number, got ${JSON.stringify(s)}`);
    return Number(s);
  };
  const projectId = int(p, 'project');
  const branchId = int(b, 'branch');
  if (!sourceId || !sinkId) throw new EtcdFixtureError(`${key}: the key names no source and sink`);
  // Sluice's sink instance ids use "#" (levels/instances.ts): a reference id never has one.
  if (sinkId.includes('#')) throw new EtcdFixtureError(`${key}: a sink id cannot contain "#"`);
  return { projectId, branchId, sourceId, sinkId };
}

function plainSink(s: SinkKey): SinkKey {
  return { branchId: s.branchId, sourceId: s.sourceId, sinkId: s.sinkId };
}

function jsonObject(key: string, text: string): Json {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new EtcdFixtureError(`${key}: the value is not JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new EtcdFixtureError(`${key}: the value must be a JSON object`);
  return v as Json;
}

/** A time of the reference (UTC, RFC 3339) in Sluice's ISO form. */
function isoTime(key: string, text: string): string {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw new EtcdFixtureError(`${key}: ${JSON.stringify(text)} is not a time like 2000-01-01T02:00:00.000Z`);
  return new Date(ms).toISOString();
}

/** An optional time field; absent, null and "" (the reference's zero time) are none. */
function optionalTime(key: string, value: Json, field: string): string | undefined {
  const v = value[field];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new EtcdFixtureError(`${key}: "${field}" must be a time string`);
  return isoTime(`${key} ("${field}")`, v);
}

const sinkPathKey = (s: SinkKey) => `${s.branchId}/${s.sourceId}/${s.sinkId}`;
const fileId = (s: SinkKey, openedAt: string) => `${sinkPathKey(s)}/${openedAt}`;
const sliceIdKey = (id: SliceId) => `${fileId(id, id.fileOpenedAt)}/${id.volume}/${id.openedAt}`;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

// ---------------------------------------------------------------------------------------------
// Writing

/** Writes a mapped fixture into a metadata store, in one transaction, under Sluice's level keys. */
export function writeLevelFixture(store: MetadataStore, fixture: LevelFixture): void {
  store.transact((tx) => {
    for (const file of fixture.files) tx.put(levelKeys.file(file, file.openedAt), file);
    for (const slice of fixture.slices) tx.put(levelKeys.slice(slice, slice.fileOpenedAt, slice.openedAt), slice);
    for (const { sink, statistics } of fixture.archives) tx.put(levelKeys.statsArchive(sink), statistics);
  });
}

/**
 * Loads an `initial-etcd-kvs.txt` (placeholders replaced) into the metadata store of a data
 * directory the service has not been started on yet. Returns what was loaded.
 */
export async function loadEtcdFixture(dataDir: string, text: string, options: { projectId: number }): Promise<LevelFixture> {
  const fixture = mapEtcdFixture(parseEtcdSnapshot(text), options);
  const store = new LmdbMetadataStore(join(dataDir, 'metadata'));
  try {
    writeLevelFixture(store, fixture);
  } finally {
    await store.close();
  }
  return fixture;
}
