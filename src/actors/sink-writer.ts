import { join } from 'node:path';
import type { LoggedRecord } from '../connectors/event-log/event-log.js';
import type { MetadataStore } from '../connectors/metadata/store.js';
import type { Logger } from '../logger.js';
import { acceptsSignal, type Signal, type Sink, type Source } from '../model/definition.js';
import { encodedReceivedAt } from '../pipeline/record-codec.js';
import { effectiveSetting, SETTINGS } from '../pipeline/settings.js';
import { importReason, triggersOf, uploadReason, type LevelLimits } from '../levels/conditions.js';
import type { FileEntry, SinkKey, SliceEntry } from '../levels/model.js';
import type { FilesRepository, NewFile } from '../levels/files-repository.js';
import type { SinkPositions } from '../levels/positions.js';
import { instanceId } from '../levels/instances.js';
import { SliceAppender } from '../levels/local.js';
import { MappingFailures, toFailureRecord, type MappingFailure } from '../storage/mapping-failures.js';
import { failureKind, type Metrics } from '../observability/metrics.js';
import type { RenderFailure } from '../pipeline/batch-render.js';
import { Actor } from './actor.js';
import { failedColumn, FailureLogLimiter } from './failure-log.js';
import type { RecordProber, RecordRenderer, RenderedRows, RenderJob } from './render/renderer.js';
import { isStoppedReason } from './render/inflight.js';
import type { RouterTarget, TargetJob } from './source-router.js';
import { DEFAULT_SINK_RETRY, failingKey, failingRetryDelayMs, reasonOf, SinkFailingError, type SinkFailing, type SinkRetryPolicy } from './sink-health.js';

export interface SinkWriterDeps {
  store: MetadataStore;
  /** The levels' files and slices: the writer's open file, its rotations and batch commits. */
  files: FilesRepository;
  /** The sink's positions: where it resumes after a failure, what a replay marks as seen. */
  positions: SinkPositions;
  failures: MappingFailures;
  renderer: RecordRenderer;
  dataDir: string;
  limits: LevelLimits;
  logger: Logger;
  /** The node's metrics: records mapped and failed per sink (none in tests that do not look). */
  metrics?: Metrics;
  /** Rate limit of the failure log lines, shared by the writers of the node (a sink's partitions share a window); one per writer if not given. */
  failureLog?: FailureLogLimiter;
  /** How often a write is tried before the sink is marked failing, and the backoff (sink-health.ts); the defaults when not given. */
  sinkRetry?: SinkRetryPolicy;
  /** How long the sink's mapping of one batch may run in one render call (ms, `--render-budget`); none: unbounded. */
  renderBudgetMs?: number;
  /**
   * Where records whose mapping stopped the process are tried before a reprocess or a replay
   * maps them (render/sandbox.ts); none: they are not mapped again, they stay failures.
   */
  prober?: RecordProber;
}

type Message =
  /** `settle`: answer after the first attempt (a caller that only wants the file open soon), or once done or given up (the router). */
  | { type: 'prepare'; settle: 'first' | 'final'; done: (job: Promise<TargetJob>) => void }
  | { type: 'deliver'; batch: readonly LoggedRecord[]; rendered: RenderedRows; job: TargetJob; through: number; done: Settle }
  | { type: 'tick'; now: number }
  | { type: 'reload'; sink: Sink; source: Source }
  | { type: 'close' }
  | { type: 'replay'; records: readonly LoggedRecord[]; markSeen?: [number, number]; done: (r: Promise<ReprocessResult>) => void };

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
 * One per enabled sink (docs/architecture.md "Actors"): takes each batch's rows as the router had them
 * rendered with the columns of the sink's open file (actors/render, off the event loop),
 * appends them to the open slice file, syncs it, and commits in one metadata
 * transaction the slice's new length, counts, times and the log offsets covered, together with
 * the batch's mapping failures. After a crash the slice is cut back to its committed length and
 * consumption resumes after the committed offset: every record lands exactly once. On ticks it
 * rotates the slice (upload trigger) and the file (import trigger); a changed definition
 * rotates the file, so waiting data is imported at once and new settings apply afterwards.
 *
 * A write that fails is tried again (the actor restarts: the slice is reopened at its committed
 * length) a bounded number of times (sink-health.ts); then the writer gives up: the sink is
 * *failing* (`failing`, logged once as an error, in the metrics and the statistics), the router
 * is answered with a SinkFailingError and goes on with the other sinks, and the committed
 * position stays where it was. While failing, every write is tried once: the router tries again
 * when `failing.retryAt` is due (sooner after a changed definition), and the first write that
 * works ends the failing state.
 */
export class SinkWriter extends Actor<Message> implements RouterTarget {
  committedOffset: number;
  private source: Source;
  private sink: Sink;
  private file?: FileEntry;
  private slice?: SliceEntry;
  private appender?: SliceAppender;
  private readonly failureLog: FailureLogLimiter;
  private readonly retry: SinkRetryPolicy;
  /**
   * Set from the writer's give-up until a write works again. `resumed`: the router took the sink
   * back (it had nothing to catch up) before a write proved it healthy: not reported as failing,
   * but its next write is tried once and a failure continues this record (no new give-up).
   */
  private health?: SinkFailing & { resumed?: boolean };

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
    const retry = deps.sinkRetry ?? DEFAULT_SINK_RETRY;
    super(
      `sink ${sink.sourceId}/${instanceId(sink.sinkId, partition)}`,
      deps.logger.child({ sinkId: sink.sinkId, sourceId: sink.sourceId, ...(partition > 0 ? { partition } : {}) }),
      { initialMs: retry.baseMs, maxMs: retry.baseMs * 2 ** retry.attempts },
    );
    this.retry = retry;
    this.sink = sink;
    this.source = source;
    this.committedOffset = startOffset;
    this.failureLog = deps.failureLog ?? new FailureLogLimiter();
    // Failing when it stopped (disabled, or the process stopped): still failing, tried again at once.
    const marker = deps.store.get<{ reason: string; since: string }>(failingKey(this.key));
    if (marker) this.health = { reason: marker.reason, since: marker.since, retries: 0, retryAt: Date.now() };
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

  /** Set while the sink is failing (see the class comment); undefined when its writes work. */
  get failing(): SinkFailing | undefined {
    return this.health && !this.health.resumed ? this.health : undefined;
  }

  /** Opens the sink's file if needed; resolves or rejects with the first attempt (the writer goes on trying). */
  open(): Promise<TargetJob> {
    return this.askPrepare('first');
  }

  /** Opens the sink's file if needed; settles once it is open or the writer gave up (SinkFailingError). */
  prepare(): Promise<TargetJob> {
    return this.askPrepare('final');
  }

  /** The router took the failing sink back with nothing to catch up: it is not reported as failing any more. */
  resumed(): void {
    if (this.health && !this.health.resumed) {
      this.health = { ...this.health, resumed: true };
      this.log.info({ committedOffset: this.committedOffset }, 'failing sink resumed: its file opens again and it has caught up with its source');
    }
  }

  private askPrepare(settle: 'first' | 'final'): Promise<TargetJob> {
    return new Promise((resolve, reject) => {
      if (this.isStopped) return reject(new Error('sink writer stopped'));
      this.send({ type: 'prepare', settle, done: (job) => job.then(resolve, reject) });
    });
  }

  deliver(batch: readonly LoggedRecord[], rendered: RenderedRows, job: TargetJob, through: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.isStopped) return reject(new Error('sink writer stopped'));
      this.send({ type: 'deliver', batch, rendered, job, through, done: { resolve, reject } });
    });
  }

  /**
   * Maps records again with the sink's current mapping, out of the log's order (kept failures,
   * or a replay from the log): what maps is written, what fails is kept as a failure again.
   * `markSeen` records, in the same transaction, that the sink has now handled that range of
   * offsets it had never consumed, so a second replay does not write them twice.
   */
  replay(records: readonly LoggedRecord[], markSeen?: [number, number]): Promise<ReprocessResult> {
    return new Promise((resolve, reject) => {
      if (this.isStopped) return reject(new Error('sink writer stopped'));
      this.send({ type: 'replay', records, markSeen, done: (p) => p.then(resolve, reject) });
    });
  }

  protected async handle(message: Message): Promise<void> {
    switch (message.type) {
      case 'prepare': {
        const job = this.ensureOpen().then(() => this.currentJob());
        if (message.settle === 'first') message.done(job);
        await job;
        if (message.settle === 'final') message.done(job);
        return;
      }
      case 'deliver':
        // The router waits for this sink: it is answered once the batch is written, or when the
        // writer gives up (giveUp); meanwhile the actor restarts and tries again.
        await this.write(message.batch, message.rendered, message.job, message.through);
        this.recovered();
        message.done.resolve();
        return;
      case 'tick':
        this.logEndedFailureWindow();
        return this.checkTriggers(message.now);
      case 'reload':
        // A changed definition may be the fix: a failing sink is tried again at once.
        if (this.health) this.health.retryAt = Date.now();
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

  /** Bounded attempts (sink-health.ts); once while the sink is failing. Replays answer their own errors. */
  protected override attemptsFor(message: Message): number {
    if (message.type === 'replay') return Infinity;
    return this.health ? 1 : this.retry.attempts;
  }

  protected override giveUp(message: Message, err: unknown, attempts: number): void {
    switch (message.type) {
      case 'prepare':
        message.done(Promise.reject(this.markFailing(err, attempts)));
        return;
      case 'deliver':
        message.done.reject(this.markFailing(err, attempts));
        return;
      case 'replay':
        return;
      default:
        // A trigger check, a reload or a close: a failing sink stays as it is (its retries are the router's).
        if (this.health) this.log.debug({ err, message: message.type }, 'failing sink: a housekeeping step failed too');
        else this.markFailing(err, attempts);
    }
  }

  /**
   * The writer gives up: the sink is failing (logged once as an error, counted, kept as a
   * marker so that it resumes from its own position after a disable or a restart), or, if it
   * was failing already, its next retry is later.
   */
  private markFailing(err: unknown, attempts: number): SinkFailingError {
    const reason = reasonOf(err);
    const now = Date.now();
    const before = this.health;
    const retries = before ? before.retries + 1 : 0;
    const retryAt = now + failingRetryDelayMs(retries, this.retry.baseMs);
    this.health = { reason, since: before?.since ?? new Date(now).toISOString(), retries, retryAt };
    const fields = { branchId: this.sink.branchId, reason, committedOffset: this.committedOffset, retryAt: new Date(retryAt).toISOString() };
    if (before) {
      this.log.warn({ ...fields, retries }, 'failing sink: tried again, still failing');
    } else {
      this.log.error(
        { ...fields, attempts },
        'sink failing: its writes keep failing; the other sinks of its source go on without it, and it resumes from its own position once its writes work again',
      );
      this.deps.metrics?.sinkGiveUps.inc({ ...this.metricLabels, branch: String(this.sink.branchId) });
      this.keepMarker({ reason, since: this.health.since });
    }
    return new SinkFailingError(this.sinkId, reason);
  }

  /** A write worked: a failing sink is healthy again. */
  private recovered(): void {
    const before = this.health;
    if (!before) return;
    this.health = undefined;
    this.log.info({ branchId: this.sink.branchId, committedOffset: this.committedOffset, failingSince: before.since }, 'failing sink recovered: its writes work again');
    this.keepMarker(undefined);
  }

  private keepMarker(value: { reason: string; since: string } | undefined): void {
    try {
      this.deps.store.transact((tx) => (value ? tx.put(failingKey(this.key), value) : tx.delete(failingKey(this.key))));
    } catch (err) {
      this.log.warn({ err }, 'could not keep the failing marker of the sink');
    }
  }

  protected override async restart(): Promise<void> {
    await this.appender?.close().catch(() => undefined);
    this.appender = undefined;
    this.committedOffset = this.deps.positions.consumerOffset(this.key) ?? this.committedOffset;
    await this.ensureOpen();
  }

  /** Opens (or resumes, truncating to the committed length) the sink's writing file and slice. */
  private async ensureOpen(): Promise<void> {
    if (this.appender && this.slice && this.file) return;
    const { files: levels } = this.deps;
    let file = levels.writingFile(this.key);
    let slice = levels.writingSlice(this.key);
    if (!file || !slice) {
      ({ file, slice } = levels.openFile(this.newFile()));
    }
    this.file = file;
    this.slice = slice;
    this.appender = await SliceAppender.open(join(this.deps.dataDir, slice.localPath), slice.uncompressedSize);
  }

  /**
   * How the next batch is to be rendered: the open file's columns, after the committed offset,
   * within the render budget, without the records parked because their mapping stopped the
   * process (stopped-mappings.ts: they are kept as failures instead). Only when open.
   */
  private currentJob(): TargetJob {
    const parked = this.deps.failures.parked(this.key, this.committedOffset);
    return {
      columns: this.file!.columns,
      after: this.committedOffset,
      allowedSignals: this.sink.allowedSignals,
      file: this.file!.openedAt,
      owner: { ...this.key, mode: 'stream' },
      ...(parked.length > 0 ? { parked } : {}),
      ...(this.deps.renderBudgetMs !== undefined ? { budgetMs: this.deps.renderBudgetMs } : {}),
    };
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

  private async write(batch: readonly LoggedRecord[], rendered: RenderedRows, job: TargetJob, through: number): Promise<void> {
    if (through <= this.committedOffset) return;
    await this.ensureOpen();
    const current = this.currentJob();
    if (job.file !== current.file || job.after !== current.after) {
      // The file rotated, or the writer restarted, after the router asked: rendered again for what holds now.
      [rendered] = await this.deps.renderer.render(batch, [current]);
    }
    // The budget ran out: the batch is written up to the records rendered, the rest comes again.
    if (rendered.cutAt !== undefined) through = Math.min(through, rendered.cutAt > 0 ? batch[rendered.cutAt - 1].offset : this.committedOffset);
    if (through <= this.committedOffset) return;
    const failed = this.failuresOf(batch, rendered);
    const length = rendered.count > 0 ? await this.appender!.appendBytes(rendered.csv) : this.slice!.uncompressedSize;
    await this.commit(batch, rendered, failed, length, through);
    // After the commit: a batch the actor retries is counted and logged once.
    this.report(rendered.count, failed, rendered.failures);
  }

  /** The records the mapping refused, to be kept; throws when the mapping itself does not compile. */
  private failuresOf(batch: readonly LoggedRecord[], rendered: RenderedRows): MappingFailure[] {
    if (rendered.error !== undefined) {
      throw new Error(rendered.error.startsWith('rendering failed') ? rendered.error : `the columns of the sink's file do not compile: ${rendered.error}`);
    }
    const failedAt = new Date().toISOString();
    return rendered.failures.map((f) => ({ offset: batch[f.index].offset, failedAt, reason: f.reason, record: toFailureRecord(batch[f.index].record) }));
  }

  /** The batch's one metadata transaction; its disk flush runs off the event loop (ingestion goes on meanwhile). */
  private async commit(batch: readonly LoggedRecord[], rendered: RenderedRows, failed: MappingFailure[], length: number, through: number): Promise<void> {
    const { store, files: levels, failures } = this.deps;
    const sliceKey = { ...this.key, fileOpenedAt: this.slice!.fileOpenedAt, openedAt: this.slice!.openedAt };
    const first = rendered.count > 0 ? batch[rendered.firstIndex] : undefined;
    const last = rendered.count > 0 ? batch[rendered.lastIndex] : undefined;
    this.slice = await store.transactAsync((tx) => {
      const slice = levels.commitBatch(sliceKey, {
        uncompressedSize: length,
        recordsCount: rendered.count,
        firstRecordAt: first && receivedAtIso(first),
        lastRecordAt: last && receivedAtIso(last),
        firstOffset: first?.offset,
        lastOffset: last?.offset,
        consumerOffset: through,
      });
      failures.add(tx, this.key, failed);
      // Parked records the batch kept as failures (and any the sink is past) are done with.
      failures.unpark(tx, this.key, through);
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
    const slices = this.deps.files.listSlices({ ...this.key, openedAt: file.openedAt });
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
      const { opened } = this.deps.files.rotateSlice(this.key);
      this.slice = opened;
      this.appender = await SliceAppender.open(join(this.deps.dataDir, opened.localPath), 0);
    }
  }

  /** Closes the file (it is then uploaded and imported) and opens a new one with the current definition. */
  private async rotateFile(): Promise<void> {
    await this.appender?.close();
    this.appender = undefined;
    const { file, slice } = this.deps.files.rotateFile(this.newFile());
    this.file = file;
    this.slice = slice;
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
    this.deps.files.closeFile(this.key);
    this.file = undefined;
    this.slice = undefined;
  }

  /** See {@link replay}. Replayed rows carry old offsets: the consumer offset stays as it is. */
  private async writeReplayed(records: readonly LoggedRecord[], markSeenRange?: [number, number]): Promise<ReprocessResult> {
    await this.ensureOpen();
    // The mapping of the sink as it is now (the file may have been opened with an older one).
    if (JSON.stringify(this.file!.columns) !== JSON.stringify(this.sink.table.mapping.columns)) await this.rotateFile();
    // Every record given is rendered: the caller chose them (old offsets, any signal it accepts).
    // Apart from the sinks that keep up; marked as a replay (a death keeps them as stopped failures).
    const job: RenderJob = { columns: this.file!.columns, after: -Infinity, owner: { ...this.key, mode: 'replay' } };
    const parked = await this.stillStopping(records, job);
    const [rendered] = await this.deps.renderer.render(records, [parked.length > 0 ? { ...job, parked } : job], 'apart');
    const failed = this.failuresOf(records, rendered);
    const failedIndexes = new Set(rendered.failures.map((f) => f.index));
    const written = records.filter((_, i) => !failedIndexes.has(i));
    const length = rendered.count > 0 ? await this.appender!.appendBytes(rendered.csv) : this.slice!.uncompressedSize;
    const { store, files: levels, positions, failures } = this.deps;
    const sliceKey = { ...this.key, fileOpenedAt: this.slice!.fileOpenedAt, openedAt: this.slice!.openedAt };
    this.slice = store.transact((tx) => {
      const slice = written.length === 0 ? this.slice! : levels.commitBatch(sliceKey, {
        uncompressedSize: length,
        recordsCount: written.length,
        firstRecordAt: receivedAtIso(written[0]),
        lastRecordAt: receivedAtIso(written[written.length - 1]),
        consumerOffset: this.committedOffset,
      });
      failures.remove(tx, this.key, written.map((w) => w.offset));
      failures.add(tx, this.key, failed);
      if (markSeenRange) positions.markSeenIn(tx, this.key, markSeenRange);
      return slice;
    });
    this.report(written.length, failed, rendered.failures);
    return { reprocessed: written.length, failed: failed.length };
  }

  /**
   * Of the records given, those kept as failures because their mapping stopped the process (or
   * a render worker), tried in the sandbox first: those that end it again are answered as
   * failures again, parked, so that a reprocess never maps in this process a record that would
   * stop it (without a sandbox, none of them is mapped).
   */
  private async stillStopping(records: readonly LoggedRecord[], job: RenderJob): Promise<Array<{ offset: number; reason: string }>> {
    const stopped = records.flatMap((r) => {
      const reason = this.deps.failures.kept(this.key, r.offset)?.reason;
      return isStoppedReason(reason) ? [{ record: r, reason: reason! }] : [];
    });
    if (stopped.length === 0) return [];
    const prober = this.deps.prober;
    if (!prober) return stopped.map((s) => ({ offset: s.record.offset, reason: s.reason }));
    const parked = await prober.probe(stopped.map((s) => s.record), job);
    this.log.info({ tried: stopped.length, stillStopping: parked.length }, 'records whose mapping stopped the process were tried apart before being mapped again');
    return parked;
  }

  /**
   * A committed batch's records in the metrics (mapped, failed by kind) and its failures in the
   * log, rate-limited (failure-log.ts). `failed[i]` is the kept failure of `failures[i]`.
   * Counters are per process: a batch redone after a restart counts again, from 0.
   */
  private report(mapped: number, failed: readonly MappingFailure[], failures: readonly RenderFailure[]): void {
    const metrics = this.deps.metrics;
    const labels = this.metricLabels;
    if (metrics && mapped > 0) metrics.recordsMapped.inc(labels, mapped);
    failed.forEach((f, i) => {
      metrics?.recordsFailed.inc({ ...labels, reason: failureKind(f.reason, failures[i]?.kind) }, 1);
      const decision = this.failureLog.failed(this.failureLogKey);
      if (decision.moreBefore !== undefined) this.logMoreFailed(decision.moreBefore);
      // Never the record's body or headers (they may hold secrets): where it is and why it failed.
      if (decision.logThis) {
        this.log.warn(
          { branchId: this.sink.branchId, offset: f.offset, column: failedColumn(failures[i] ?? f), reason: f.reason },
          'record not mapped, kept as a mapping failure (more failures of the sink within a minute are counted, not logged one by one)',
        );
      }
    });
  }

  /** On ticks: the count of the failures not logged one by one, once their minute has ended. */
  private logEndedFailureWindow(): void {
    const more = this.failureLog.ended(this.failureLogKey);
    if (more !== undefined) this.logMoreFailed(more);
  }

  private logMoreFailed(more: number): void {
    this.log.warn({ branchId: this.sink.branchId, more }, `${more} more records not mapped within a minute, kept as mapping failures`);
  }

  /** The sink id without the partition suffix: the label is the configured sink. */
  private get metricLabels(): { source: string; sink: string } {
    return { source: this.sink.sourceId, sink: this.sink.sinkId };
  }

  /** The sink, not the instance: the writers of a sink's partitions share one window. */
  private get failureLogKey(): string {
    return `${this.sink.branchId}/${this.sink.sourceId}/${this.sink.sinkId}`;
  }
}

/** Receive time of a logged record, read from its encoded form when it has one (no decoding). */
function receivedAtIso(r: LoggedRecord): string {
  return new Date(r.encoded ? encodedReceivedAt(r.encoded) : r.record.receivedAt.getTime()).toISOString();
}
