/**
 * The sink writer (docs/architecture.md "Actors"), one per enabled sink and partition. This
 * module is the actor: its messages, what each does, and its retries. Its parts, each with one
 * job: writing-file.ts (the open file and slice, rotated and closed), triggers.ts (when they
 * rotate), replay-write.ts (replays and reprocessing), health.ts (failing and recovering),
 * events.ts (everything it logs and counts), failure-log.ts (the rate limit of its mapping
 * failure lines), rendered-batch.ts (what it reads off a rendered batch).
 */
import type { LoggedRecord } from '../../ports/event-log.js';
import type { MetadataStore } from '../../ports/metadata-store.js';
import type { Logger } from '../../logger.js';
import { acceptsSignal, type Signal, type Sink, type Source } from '../../model/definition.js';
import { effectiveSetting, SETTINGS } from '../../pipeline/settings.js';
import type { LevelLimits, SinkKey } from '../../model/levels.js';
import type { FilesRepository, NewFile } from '../../levels/files-repository.js';
import type { SinkPositions } from '../../levels/positions.js';
import { instanceId } from '../../levels/instances.js';
import type { MappingFailure, MappingFailures } from '../../levels/mapping-failures.js';
import { addFilteredIn } from '../../levels/filtered-counts.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RenderFailure } from '../../pipeline/batch-render.js';
import { Actor } from '../actor.js';
import { FailureLogLimiter } from './failure-log.js';
import type { RecordProber, RecordRenderer, RenderedRows } from '../render/renderer.js';
import type { RouterTarget, TargetJob } from '../source-router.js';
import { DEFAULT_SINK_RETRY, type SinkFailing, type SinkRetryPolicy } from '../sink-health.js';
import { SinkWriterEvents } from './events.js';
import { WriterHealth } from './health.js';
import { failuresOf, receivedAtIso } from './rendered-batch.js';
import { writeReplayed } from './replay-write.js';
import { dueRotation } from './triggers.js';
import { WritingFile } from './writing-file.js';
import type { ReprocessResult } from '../../contract/failures.js';

export { FailureLogLimiter } from './failure-log.js';

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

/** What a reprocess did (records written again, those still failing): the API contract's. */
export type { ReprocessResult };

/** Settings as a file snapshot: every user-changeable key of sinks with its effective value (a source's quota is not the file's). */
export function fileSettings(source: Source, sink: Sink): NewFile['settings'] {
  return SETTINGS.filter((d) => !d.protected && d.scope !== 'source').map((d) => ({ key: d.key, value: effectiveSetting(d.key, source.config, sink.config) }));
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
 * works ends the failing state (health.ts).
 */
export class SinkWriter extends Actor<Message> implements RouterTarget {
  committedOffset: number;
  private source: Source;
  private sink: Sink;
  private readonly writing: WritingFile;
  private readonly retry: SinkRetryPolicy;
  private readonly events: SinkWriterEvents;
  private readonly health: WriterHealth;

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
    // The metrics' labels and the failure log's window are the configured sink's, not the partition's.
    const identity = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: sink.sinkId };
    this.events = new SinkWriterEvents(this.log, deps.metrics, identity, deps.failureLog ?? new FailureLogLimiter());
    this.health = new WriterHealth(deps.store, this.key, retry.baseMs, this.events);
    this.writing = new WritingFile(deps.files, this.key, deps.dataDir, () => this.newFile());
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
    return this.health.failing;
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
    this.health.resumed(this.committedOffset);
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
        const job = this.openFile().then(() => this.currentJob());
        if (message.settle === 'first') message.done(job);
        await job;
        if (message.settle === 'final') message.done(job);
        return;
      }
      case 'deliver':
        // The router waits for this sink: it is answered once the batch is written, or when the
        // writer gives up (giveUp); meanwhile the actor restarts and tries again.
        await this.write(message.batch, message.rendered, message.job, message.through);
        this.health.recovered(this.committedOffset);
        message.done.resolve();
        return;
      case 'tick':
        this.events.failureWindowChecked();
        return this.checkTriggers(message.now);
      case 'reload':
        // A changed definition may be the fix: a failing sink is tried again at once.
        this.health.retryNow();
        return this.reload(message.sink, message.source);
      case 'close':
        return this.writing.close();
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
    return this.health.isFailing ? 1 : this.retry.attempts;
  }

  protected override giveUp(message: Message, err: unknown, attempts: number): void {
    switch (message.type) {
      case 'prepare':
        message.done(Promise.reject(this.health.gaveUp(err, attempts, this.committedOffset)));
        return;
      case 'deliver':
        message.done.reject(this.health.gaveUp(err, attempts, this.committedOffset));
        return;
      case 'replay':
        return;
      default:
        // A trigger check, a reload or a close: a failing sink stays as it is (its retries are the router's).
        if (this.health.isFailing) this.events.stepFailedWhileFailing(err, message.type);
        else this.health.gaveUp(err, attempts, this.committedOffset);
    }
  }

  protected override async restart(): Promise<void> {
    await this.writing.release();
    this.committedOffset = this.deps.positions.consumerOffset(this.key) ?? this.committedOffset;
    await this.openFile();
  }

  /**
   * How the next batch is to be rendered: the open file's columns and filter, after the committed offset,
   * within the render budget, without the records parked because their mapping stopped the
   * process (stopped-mappings.ts: they are kept as failures instead). Only when open.
   */
  private currentJob(): TargetJob {
    const parked = this.deps.failures.parked(this.key, this.committedOffset);
    const file = this.writing.file!;
    return {
      columns: file.columns,
      ...(file.filter ? { filter: file.filter } : {}),
      after: this.committedOffset,
      allowedSignals: this.sink.allowedSignals,
      file: file.openedAt,
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
      ...(this.sink.table.mapping.filter ? { filter: this.sink.table.mapping.filter } : {}),
      settings: fileSettings(this.source, this.sink),
    };
  }

  private async write(batch: readonly LoggedRecord[], rendered: RenderedRows, job: TargetJob, through: number): Promise<void> {
    if (through <= this.committedOffset) return;
    await this.openFile();
    const current = this.currentJob();
    if (job.file !== current.file || job.after !== current.after) {
      // The file rotated, or the writer restarted, after the router asked: rendered again for what holds now.
      [rendered] = await this.deps.renderer.render(batch, [current]);
    }
    // The budget ran out: the batch is written up to the records rendered, the rest comes again.
    if (rendered.cutAt !== undefined) through = Math.min(through, rendered.cutAt > 0 ? batch[rendered.cutAt - 1].offset : this.committedOffset);
    if (through <= this.committedOffset) return;
    const failed = failuresOf(batch, rendered);
    const length = rendered.count > 0 ? await this.writing.append(rendered.csv) : this.writing.slice!.uncompressedSize;
    await this.commit(batch, rendered, failed, length, through);
    // After the commit: a batch the actor retries is counted and logged once.
    this.report(rendered.count, failed, rendered.failures, rendered.filtered?.length ?? 0);
  }

  /** The batch's one metadata transaction; its disk flush runs off the event loop (ingestion goes on meanwhile). */
  private async commit(batch: readonly LoggedRecord[], rendered: RenderedRows, failed: MappingFailure[], length: number, through: number): Promise<void> {
    const { store, files, failures } = this.deps;
    const sliceKey = this.writing.sliceKey;
    const first = rendered.count > 0 ? batch[rendered.firstIndex] : undefined;
    const last = rendered.count > 0 ? batch[rendered.lastIndex] : undefined;
    this.writing.committed(await store.transactAsync((tx) => {
      const slice = files.commitBatch(sliceKey, {
        uncompressedSize: length,
        recordsCount: rendered.count,
        firstRecordAt: first && receivedAtIso(first),
        lastRecordAt: last && receivedAtIso(last),
        firstOffset: first?.offset,
        lastOffset: last?.offset,
        consumerOffset: through,
      });
      failures.add(tx, this.key, failed);
      // Records the filter skipped are handled too: counted with the batch that moves past them.
      if (rendered.filtered) addFilteredIn(tx, this.key, rendered.filtered.length);
      // Parked records the batch kept as failures (and any the sink is past) are done with.
      failures.unpark(tx, this.key, through);
      return slice;
    }));
    this.committedOffset = through;
  }

  private async checkTriggers(now: number): Promise<void> {
    if (!this.writing.file || !this.writing.slice) {
      await this.openFile();
    }
    const file = this.writing.file!;
    const slices = this.deps.files.listSlices({ ...this.key, openedAt: file.openedAt });
    const rotation = dueRotation(file, slices, this.writing.slice!, this.deps.limits, now);
    if (rotation?.level === 'file') {
      this.events.fileRotated(rotation.reason, rotation.records);
      return this.writing.rotateFile();
    }
    if (rotation?.level === 'slice') {
      this.events.sliceRotated(rotation.reason, rotation.records);
      await this.writing.rotateSlice();
    }
  }

  private async reload(sink: Sink, source: Source): Promise<void> {
    this.sink = sink;
    this.source = source;
    if (this.writing.isStale()) {
      this.events.definitionChanged();
      await this.writing.rotateFile();
    }
  }

  /** The writing file, open; one left with an earlier definition by a stop is rotated first (writing-file.ts). */
  private openFile(): Promise<void> {
    return this.writing.open(() => this.events.resumedFileStale());
  }

  /** See {@link replay} and replay-write.ts. */
  private async writeReplayed(records: readonly LoggedRecord[], markSeenRange?: [number, number]): Promise<ReprocessResult> {
    const { store, files, positions, failures, renderer, prober } = this.deps;
    const { written, failed, renderFailures, filtered } = await writeReplayed({
      store, files, positions, failures, renderer, prober,
      writing: this.writing,
      key: this.key,
      columns: this.sink.table.mapping.columns,
      filter: this.sink.table.mapping.filter,
      committedOffset: this.committedOffset,
      events: this.events,
    }, records, markSeenRange);
    this.report(written, failed, renderFailures, filtered);
    return { reprocessed: written, failed: failed.length, ...(filtered > 0 ? { filtered } : {}) };
  }

  /**
   * A committed batch's records in the metrics (mapped, failed by kind) and its failures in the
   * log, rate-limited (events.ts, failure-log.ts). `failed[i]` is the kept failure of `failures[i]`.
   * Counters are per process: a batch redone after a restart counts again, from 0.
   */
  private report(mapped: number, failed: readonly MappingFailure[], failures: readonly RenderFailure[], filtered: number): void {
    this.events.recordsMapped(mapped);
    this.events.recordsFiltered(filtered);
    failed.forEach((f, i) => this.events.recordNotMapped(f, failures[i]));
  }
}
