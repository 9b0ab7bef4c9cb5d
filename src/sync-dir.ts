/**
 * fsync of a directory, which makes a file created or renamed in it durable. Used by the local
 * level (levels/local.ts) and the local-directory staging adapter, which both create files that
 * must survive a crash once their metadata says they exist.
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Makes a new directory entry or rename in `dir` durable (a no-op where directories cannot be opened). */
export async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some platforms cannot fsync a directory; the entry is still there.
  } finally {
    await handle?.close();
  }
}
