/**
 * A sink writer's open file and slice, and the appender of the slice's local CSV: opened (or
 * resumed, cut back to the slice's committed length), rotated, closed. The metadata side of
 * each step is one transaction of the files repository; this holds what the writer works on
 * between them.
 */
import { join } from 'node:path';
import type { FilesRepository, NewFile } from '../../levels/files-repository.js';
import { SliceAppender } from '../../levels/local.js';
import type { FileEntry, SinkKey, SliceEntry, SliceKey } from '../../model/levels.js';

export class WritingFile {
  /** The sink's writing file and slice, once opened; the slice as of its last commit. */
  file?: FileEntry;
  slice?: SliceEntry;
  private appender?: SliceAppender;

  constructor(
    private readonly files: FilesRepository,
    /** The writer's instance (a partition of the sink has its own files). */
    private readonly key: SinkKey,
    /** The local level's root: the data directory. */
    private readonly dataDir: string,
    /** What a new file is opened with: the sink's definition as it is now. */
    private readonly newFile: () => NewFile,
  ) {}

  /**
   * Opens (or resumes, truncating to the committed length) the sink's writing file and slice.
   * A resumed file opened with another definition than the sink's current one is rotated at
   * once (`onStale` is told first): the process stopped between a definition change and the
   * rotation it asked for, and the file's own triggers and columns would otherwise hold until
   * that file rotated by its old triggers.
   */
  async open(onStale?: () => void): Promise<void> {
    if (this.appender && this.slice && this.file) return;
    let file = this.files.writingFile(this.key);
    let slice = this.files.writingSlice(this.key);
    const resumed = file !== undefined && slice !== undefined;
    if (!file || !slice) {
      ({ file, slice } = this.files.openFile(this.newFile()));
    }
    this.file = file;
    this.slice = slice;
    this.appender = await SliceAppender.open(join(this.dataDir, slice.localPath), slice.uncompressedSize);
    if (resumed && this.isStale()) {
      onStale?.();
      await this.rotateFile();
    }
  }

  /** Whether the open file was opened with another table, columns, settings or filter than the sink has now. */
  isStale(): boolean {
    return this.file !== undefined && definitionOf(this.file) !== definitionOf(this.newFile());
  }

  /** The key of the writing slice (open). */
  get sliceKey(): SliceKey {
    return { ...this.key, fileOpenedAt: this.slice!.fileOpenedAt, openedAt: this.slice!.openedAt };
  }

  /** Appends rendered CSV to the slice's local file (synced); returns the file's new byte length (open). */
  append(csv: Uint8Array): Promise<number> {
    return this.appender!.appendBytes(csv);
  }

  /** The slice as its last commit left it (its length, counts and offsets). */
  committed(slice: SliceEntry): void {
    this.slice = slice;
  }

  /** The upload trigger: the slice closes (then it is uploaded) and the next slice of the file opens. */
  async rotateSlice(): Promise<void> {
    await this.appender?.close();
    const { opened } = this.files.rotateSlice(this.key);
    this.slice = opened;
    this.appender = await SliceAppender.open(join(this.dataDir, opened.localPath), 0);
  }

  /** Closes the file (it is then uploaded and imported) and opens a new one with the current definition. */
  async rotateFile(): Promise<void> {
    await this.appender?.close();
    this.appender = undefined;
    const { file, slice } = this.files.rotateFile(this.newFile());
    this.file = file;
    this.slice = slice;
    this.appender = await SliceAppender.open(join(this.dataDir, slice.localPath), 0);
  }

  /** The sink was disabled or deleted: its file is closed and will still be imported. */
  async close(): Promise<void> {
    await this.appender?.close();
    this.appender = undefined;
    this.files.closeFile(this.key);
    this.file = undefined;
    this.slice = undefined;
  }

  /** After a failure: the local file is let go, and the next open() reads the committed state again. */
  async release(): Promise<void> {
    await this.appender?.close().catch(() => undefined);
    this.appender = undefined;
  }
}

/** What a file keeps of its sink's definition: a change of it rotates the file. */
function definitionOf(file: Pick<NewFile, 'tableId' | 'columns' | 'settings' | 'filter'>): string {
  return JSON.stringify([file.tableId, file.columns, file.settings, file.filter]);
}
