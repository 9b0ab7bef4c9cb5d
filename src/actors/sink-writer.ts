import { join } from 'node:path';
import type { MetadataStore } from '../connectors/metadata/store.js';
import type { Logger } from '../logger.js';
import { acceptsSignal, type Signal, type Sink, type Source } from '../definition/model.js';
import { compileMapping, MappingError, type CompiledMapping } from '../pipeline/columns/index.js';
import type { TemplateEngine } from '../pipeline/template-engine.js';
import { effectiveSetting, SETTINGS } from '../pipeline/settings.js';
import { importReason, triggersOf, uploadReason, type LevelLimits } from '../pipeline/triggers.js';
import { levelKeys, type FileEntry, type SinkKey, type SliceEntry } from '../storage/levels/model.js';
import { markSeen } from '../pipeline/seen-offsets.js';
import type { LevelRepository, NewFile } from '../storage/levels/repository.js';
import { instanceId } from '../storage/levels/instances.js';
import { SliceAppender } from '../storage/levels/local-slices.js';
import { MappingFailures, toFailureRecord, type MappingFailure } from '../storage/mapping-failures.js';
import { Actor } from './actor.js';
import type { RoutedRecord, RouterTarget } from './source-router.js';

export interface SinkWriterDeps {
  store: MetadataStore;
  levels: LevelRepository;
  failures: MappingFailures;
  engine: TemplateEngine;
  dataDir: string;
  limits: LevelLimits;
  logger: Logger;
}

type Message =
  | { type: 'deliver'; records: RoutedRecord[]; through: number; done: Settle }
  | { type: 'tick'; now: number }
  | { type: 'reload'; sink: Sink; source: Source }
  | { type: 'close' }
  | { type: 'replay'; records: RoutedRecord[]; markSeen?: [number, number]; done: (r: Promise<ReprocessResult>) => void };

interface Settle {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface ReprocessResult {
  reprocessed: number;
  failed: number;
}

/** Settings as a file snapshot: every user-changeable key with its effective value. */
export function fileSettings(source: Source, sink: Sink): NewFile['settings'] {
  return SETTINGS.filter((d) => !d.protected).map((d) => ({ key: d.key, value: effectiveSetting(d.key, source.config, sink.config) }));
}

/**
 * One per enabled sink (DESIGN.md "Actors"): maps each delivered record through the sink's
 * columns, appends the rows to the open slice file, syncs it, and commits in one metadata
 * transaction the slice's new length, counts, times and the log offsets covered, together with
 * the batch's mapping failures. After a crash the slice is cut back to its committed length and
 * consumption resumes after the committed offset: every record lands exactly once. On ticks it
 * rotates the slice (upload trigger) and the file (import trigger); a changed definition
 * rotates the file, so waiting data is imported at once and new settings apply afterwards.
 */
export class SinkWriter extends Actor<Message> implements RouterTarget {
  committedOffset: number;
  private source: Source;
  private sink: Sink;
  private file?: FileEntry;
  private slice?: SliceEntry;
  private appender?: SliceAppender;
  private mapping?: CompiledMapping;

  constructor(
    sink: Sink,
    source: Source,
    startOffset: number,
    private readonly deps: SinkWriterDeps,
    /**
     * The partition of the source's topic this writer reads (Kafka topics of several
     * partitions: one writer per partition, each with its own files and positions, stored
     * under the instance id `<sinkId>#<partition>`; partition 0 under the sink id).
     */
    readonly partition = 0,
  ) {
    super(`sink ${sink.sourceId}/${instanceId(sink.sinkId, partition)}`, deps.logger.child({ sinkId: sink.sinkId, sourceId: sink.sourceId, ...(partition > 0 ? { partition } : {}) }));
    this.sink = sink;
    this.source = source;
    this.committedOffset = startOffset;
  }

  /** The instance id (see `partition`): what the router and the level state know this writer by. */
  get sinkId(): string {
    return instanceId(this.sink.sinkId, this.partition);
  }

  get key(): SinkKey {
    return { branchId: this.sink.branchId, sourceId: this.sink.sourceId, sinkId: this.sinkId };
  }

  /** The definition versions the writer works with: a change of either reloads it. */
  get versions(): string {
    return `${this.source.version.number}/${this.sink.version.number}`;
  }

  accepts(signal: string): boolean {
    return acceptsSignal(this.sink, signal as Signal | '');
  }

  deliver(records: RoutedRecord[], through: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.isStopped) return reject(new Error('sink writer stopped'));
      this.send({ type: 'deliver', records, through, done: { resolve, reject } });
    });
  }

  /**
   * Maps records again with the sink's current mapping, out of the log's order (kept failures,
   * or a replay from the log): what maps is written, what fails is kept as a failure again.
   * `markSeen` records, in the same transaction, that the sink has now handled that range of
   * offsets it had never consumed, so a second replay does not write them twice.
   */
  replay(records: RoutedRecord[], markSeen?: [number, number]): Promise<ReprocessResult> {
    return new Promise((resolve, reject) => {
      if (this.isStopped) return reject(new Error('sink writer stopped'));
      this.send({ type: 'replay', records, markSeen, done: (p) => p.then(resolve, reject) });
    });
  }

  protected async handle(message: Message): Promise<void> {
    switch (message.type) {
      case 'deliver':
        try {
          await this.write(message.records, message.through);
          message.done.resolve();
        } catch (err) {
          // The router waits for this sink: it is told, and this actor restarts and retries.
          message.done.reject(err);
          throw err;
        }
        return;
      case 'tick':
        return this.checkTriggers(message.now);
      case 'reload':
        return this.reload(message.sink, message.source);
      case 'close':
        return this.closeFile();
      case 'replay': {
        const result = this.writeReplayed(message.records, message.markSeen);
        message.done(result);
        await result.catch(() => undefined);
        return;
      }
    }
  }

  protected override async restart(): Promise<void> {
    await this.appender?.close().catch(() => undefined);
    this.appender = undefined;
    this.committedOffset = this.deps.levels.consumerOffset(this.key) ?? this.committedOffset;
    await this.ensureOpen();
  }

  /** Opens (or resumes, truncating to the committed length) the sink's writing file and slice. */
  private async ensureOpen(): Promise<void> {
    if (this.appender && this.slice && this.file && this.mapping) return;
    const { levels } = this.deps;
    let file = levels.writingFile(this.key);
    let slice = levels.writingSlice(this.key);
    if (!file || !slice) {
      ({ file, slice } = levels.openFile(this.newFile()));
    }
    this.file = file;
    this.slice = slice;
    this.mapping = await compileMapping(file.columns, this.deps.engine);
    this.appender = await SliceAppender.open(join(this.deps.dataDir, slice.localPath), slice.uncompressedSize);
  }

  private newFile(): NewFile {
    return {
      projectId: this.sink.projectId,
      branchId: this.sink.branchId,
      sourceId: this.sink.sourceId,
      sinkId: this.sinkId,
      tableId: this.sink.table.tableId,
      columns: this.sink.table.mapping.columns,
      settings: fileSettings(this.source, this.sink),
    };
  }

  private async write(records: RoutedRecord[], through: number): Promise<void> {
    if (through <= this.committedOffset) return;
    const fresh = records.filter((r) => r.offset > this.committedOffset);
    await this.ensureOpen();
    const results = fresh.length > 0 ? await this.mapping!.renderMany(fresh.map((r) => r.ctx)) : [];
    const rows: string[][] = [];
    const written: RoutedRecord[] = [];
    const failed: MappingFailure[] = [];
    results.forEach((res, i) => {
      if (res instanceof MappingError) {
        failed.push({ offset: fresh[i].offset, failedAt: new Date().toISOString(), reason: res.message, record: toFailureRecord(fresh[i].ctx.record) });
      } else {
        rows.push(res);
        written.push(fresh[i]);
      }
    });
    const length = rows.length > 0 ? await this.appender!.append(rows) : this.slice!.uncompressedSize;
    await this.commit(written, failed, length, through);
    if (failed.length > 0) this.log.debug({ failed: failed.length, first: failed[0].reason }, 'records not mapped');
  }

  /** The batch's one metadata transaction; its disk flush runs off the event loop (ingestion goes on meanwhile). */
  private async commit(written: RoutedRecord[], failed: MappingFailure[], length: number, through: number): Promise<void> {
    const { store, levels, failures } = this.deps;
    const sliceKey = { ...this.key, fileOpenedAt: this.slice!.fileOpenedAt, openedAt: this.slice!.openedAt };
    const first = written[0];
    const last = written[written.length - 1];
    this.slice = await store.transactAsync((tx) => {
      const slice = levels.commitBatch(sliceKey, {
        uncompressedSize: length,
        recordsCount: written.length,
        firstRecordAt: first?.ctx.record.receivedAt.toISOString(),
        lastRecordAt: last?.ctx.record.receivedAt.toISOString(),
        firstOffset: first?.offset,
        lastOffset: last?.offset,
        consumerOffset: through,
      });
      failures.add(tx, this.key, failed);
      return slice;
    });
    this.committedOffset = through;
  }

  private async checkTriggers(now: number): Promise<void> {
    if (!this.file || !this.slice) {
      await this.ensureOpen();
    }
    const triggers = triggersOf(this.file!.settings);
    const file = this.file!;
    const slices = this.deps.levels.listSlices({ ...this.key, openedAt: file.openedAt });
    const fileAmounts = {
      openedAtMs: Date.parse(file.openedAt),
      slicesCount: slices.length,
      recordsCount: slices.reduce((n, s) => n + s.recordsCount, 0),
      sizeBytes: slices.reduce((n, s) => n + s.uncompressedSize, 0),
    };
    const importBecause = importReason(fileAmounts, triggers.import, this.deps.limits, now);
    if (importBecause) {
      this.log.info({ reason: importBecause, records: fileAmounts.recordsCount }, 'file rotation: importing');
      return this.rotateFile();
    }
    const slice = this.slice!;
    const uploadBecause = uploadReason(
      { openedAtMs: Date.parse(slice.openedAt), recordsCount: slice.recordsCount, sizeBytes: slice.uncompressedSize },
      triggers.upload,
      this.deps.limits,
      now,
    );
    if (uploadBecause) {
      this.log.debug({ reason: uploadBecause, records: slice.recordsCount }, 'slice rotation: uploading');
      await this.appender?.close();
      const { opened } = this.deps.levels.rotateSlice(this.key);
      this.slice = opened;
      this.appender = await SliceAppender.open(join(this.deps.dataDir, opened.localPath), 0);
    }
  }

  /** Closes the file (it is then uploaded and imported) and opens a new one with the current definition. */
  private async rotateFile(): Promise<void> {
    await this.appender?.close();
    this.appender = undefined;
    const { file, slice } = this.deps.levels.rotateFile(this.newFile());
    this.file = file;
    this.slice = slice;
    this.mapping = await compileMapping(file.columns, this.deps.engine);
    this.appender = await SliceAppender.open(join(this.deps.dataDir, slice.localPath), 0);
  }

  private async reload(sink: Sink, source: Source): Promise<void> {
    const before = this.file ? JSON.stringify([this.file.tableId, this.file.columns, this.file.settings]) : undefined;
    this.sink = sink;
    this.source = source;
    const after = JSON.stringify([sink.table.tableId, sink.table.mapping.columns, fileSettings(source, sink)]);
    if (before !== undefined && before !== after) {
      this.log.info('sink definition changed: rotating the file so that waiting data is imported now');
      await this.rotateFile();
    }
  }

  /** The sink was disabled or deleted: its file is closed and will still be imported. */
  private async closeFile(): Promise<void> {
    await this.appender?.close();
    this.appender = undefined;
    this.deps.levels.closeFile(this.key);
    this.file = undefined;
    this.slice = undefined;
  }

  /** See {@link replay}. Replayed rows carry old offsets: the consumer offset stays as it is. */
  private async writeReplayed(records: RoutedRecord[], markSeenRange?: [number, number]): Promise<ReprocessResult> {
    await this.ensureOpen();
    // The mapping of the sink as it is now (the file may have been opened with an older one).
    if (JSON.stringify(this.file!.columns) !== JSON.stringify(this.sink.table.mapping.columns)) await this.rotateFile();
    const results = records.length > 0 ? await this.mapping!.renderMany(records.map((r) => r.ctx)) : [];
    const rows: string[][] = [];
    const written: RoutedRecord[] = [];
    const failed: MappingFailure[] = [];
    results.forEach((res, i) => {
      if (res instanceof MappingError) {
        failed.push({ offset: records[i].offset, failedAt: new Date().toISOString(), reason: res.message, record: toFailureRecord(records[i].ctx.record) });
      } else {
        rows.push(res);
        written.push(records[i]);
      }
    });
    const length = rows.length > 0 ? await this.appender!.append(rows) : this.slice!.uncompressedSize;
    const { store, levels, failures } = this.deps;
    const sliceKey = { ...this.key, fileOpenedAt: this.slice!.fileOpenedAt, openedAt: this.slice!.openedAt };
    this.slice = store.transact((tx) => {
      const slice = written.length === 0 ? this.slice! : levels.commitBatch(sliceKey, {
        uncompressedSize: length,
        recordsCount: written.length,
        firstRecordAt: written[0].ctx.record.receivedAt.toISOString(),
        lastRecordAt: written[written.length - 1].ctx.record.receivedAt.toISOString(),
        consumerOffset: this.committedOffset,
      });
      failures.remove(tx, this.key, written.map((w) => w.offset));
      failures.add(tx, this.key, failed);
      if (markSeenRange) tx.put(levelKeys.seen(this.key), markSeen(levels.seenOffsets(this.key), ...markSeenRange));
      return slice;
    });
    return { reprocessed: written.length, failed: failed.length };
  }
}
