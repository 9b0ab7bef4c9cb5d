/**
 * In-flight marks: which records a renderer is mapping right now, in a file of its own (a
 * *slot*: one per thread that maps, since a thread maps one chunk at a time), so that the
 * next start knows what was being mapped when the process died and does not map it again
 * (actors/stopped-mappings.ts): a record whose template crashes the process, or grows it
 * until the kernel kills it, is parked as a mapping failure instead of killing every restart.
 *
 * A mark is one `pwrite` at the start of the file, no fsync: the page cache holds it through
 * any death of the process (SIGKILL, an OOM kill, a V8 fatal error); only a crash of the
 * machine can lose it, and that crash was not the record's doing. Clearing it writes one
 * byte. The mark is the first line of the file (a longer older mark may follow it: ignored).
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { RenderGuard, RenderOwner } from '../../pipeline/batch-render.js';

/** The slots' folder in the data directory. */
export const INFLIGHT_DIR = 'inflight';

/** What a slot says is being mapped. */
export interface InflightMark {
  owner: RenderOwner;
  offsets: readonly number[];
}

/** A mark a previous process left, with the slot file that holds it. */
export interface LeftMark extends InflightMark {
  file: string;
}

const IDLE = Buffer.from('\n');

/** The failure of a record that was being mapped when the process died (stopped-mappings.ts). */
export const STOPPED_PROCESS_REASON =
  'The mapping of this record stopped the process: it was being mapped when the process died (a crash, an out-of-memory kill or a fatal error). It is not mapped again unless reprocessed.';

/** The failure of a record whose mapping ends the render worker (worker-renderer.ts). */
export function stoppedWorkerReason(why: string): string {
  return `The mapping of this record stopped the render worker (${why}). It is not mapped again unless reprocessed.`;
}

/** The failure of a record whose mapping, tried again in a process of its own, ended that process too (sandbox.ts). */
export function stoppedSandboxReason(why: string): string {
  return `The mapping of this record stopped the process that tried it apart (${why}). It is not mapped again unless reprocessed.`;
}

/** Whether a failure's reason says its mapping stopped a process or a render worker (one of the reasons above). */
export function isStoppedReason(reason: string | undefined): boolean {
  return reason !== undefined && reason.startsWith('The mapping of this record stopped ');
}

/** A slot file of this process; `name` is unique to it (see slotPath). */
export class InflightSlot implements RenderGuard {
  private fd: number | undefined;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w', 0o600);
  }

  enter(owner: RenderOwner, offsets: readonly number[]): void {
    if (this.fd === undefined) return;
    const line = Buffer.from(JSON.stringify({ owner, offsets } satisfies InflightMark) + '\n');
    writeSync(this.fd, line, 0, line.length, 0);
  }

  leave(): void {
    if (this.fd !== undefined) writeSync(this.fd, IDLE, 0, 1, 0);
  }

  /** A graceful end: nothing is in flight, the file goes. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.path, { force: true });
  }
}

/**
 * A slot's path for one thread of this process: unique to the process (its pid and a random
 * part), so that the marks of a previous process are never overwritten before they are taken.
 */
export function slotPath(dataDir: string, thread: string): string {
  const dir = join(dataDir, INFLIGHT_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return join(dir, `${thread}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
}

/** The mark a slot file holds; undefined when idle, missing or unreadable (a machine crash can tear it). */
export function readMark(path: string): InflightMark | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const end = text.indexOf('\n');
  if (end <= 0) return undefined;
  try {
    const mark = JSON.parse(text.slice(0, end)) as InflightMark;
    const o = mark.owner;
    const valid = o && typeof o.sinkId === 'string' && typeof o.sourceId === 'string'
      && Number.isSafeInteger(o.branchId) && (o.mode === 'stream' || o.mode === 'replay')
      && Array.isArray(mark.offsets) && mark.offsets.every((n) => Number.isSafeInteger(n));
    return valid ? { owner: o, offsets: mark.offsets } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The slot files in the data directory when this process starts (every one was left by a
 * previous process: this one has not made its own yet), with the marks of those that were not
 * idle. The files stay until `forget` is called with them, once what they say is kept.
 */
export function leftMarks(dataDir: string): { marks: LeftMark[]; files: string[] } {
  const dir = join(dataDir, INFLIGHT_DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { marks: [], files: [] };
  }
  const files = names.map((n) => join(dir, n));
  const marks: LeftMark[] = [];
  for (const file of files) {
    const mark = readMark(file);
    if (mark) marks.push({ ...mark, file });
  }
  return { marks, files };
}

export function forget(files: readonly string[]): void {
  for (const file of files) rmSync(file, { force: true });
}
