/**
 * Where a downloaded file goes: a path, written as `<path>.part` and renamed when complete (so a
 * file with the final name is always whole), or standard output. Streams: the file is never held
 * in memory, however big.
 */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { pipeline } from 'node:stream/promises';
import { ignoreClosedStdout, isClosedPipe } from './closed-stdout.js';
import { CliError } from './errors.js';

export interface Output {
  /** How the final message names it: the path, or "standard output". */
  readonly label: string;
  /** Streams the body in; resolves to the bytes written once the output is complete. */
  write(body: ReadableStream<Uint8Array>, onBytes: (bytes: number) => void, signal?: AbortSignal): Promise<number>;
  /** Removes the partial file after a failure (nothing for standard output). */
  discard(): Promise<void>;
}

function counter(onBytes: (bytes: number) => void) {
  let bytes = 0;
  const count = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      bytes += chunk.length;
      onBytes(bytes);
      yield chunk;
    }
  };
  return { count, total: () => bytes };
}

function fromWeb(body: ReadableStream<Uint8Array>): Readable {
  // The global ReadableStream and node:stream/web's are the same class; only the typings differ.
  return Readable.fromWeb(body as unknown as NodeReadableStream<Uint8Array>);
}

/**
 * Opens the output before anything is exported, so that an unwritable path fails at once
 * rather than after a long export.
 */
export async function openOutput(out: string, stdout: NodeJS.WritableStream): Promise<Output> {
  if (out === '-') {
    return {
      label: 'standard output',
      async write(body, onBytes, signal) {
        const c = counter(onBytes);
        ignoreClosedStdout(stdout);
        try {
          // end: false — standard output stays open for whatever the process writes after.
          await pipeline(fromWeb(body), c.count, stdout, { end: false, signal });
        } catch (err) {
          if (!isClosedPipe(err)) throw err;
          throw new CliError(`standard output was closed after ${c.total()} bytes, before the whole file was written`);
        }
        return c.total();
      },
      async discard() {},
    };
  }
  const part = `${out}.part`;
  let handle: FileHandle;
  try {
    handle = await open(part, 'w');
  } catch (err) {
    throw new CliError(`cannot write ${part}: ${(err as Error).message}`);
  }
  let done = false;
  return {
    label: out,
    async write(body, onBytes, signal) {
      const c = counter(onBytes);
      try {
        await pipeline(fromWeb(body), c.count, handle.createWriteStream(), { signal });
        await rename(part, out);
      } catch (err) {
        if ((err as Error)?.name === 'AbortError') throw err;
        throw new CliError(`the download to ${out} failed: ${(err as Error).message}`);
      }
      done = true;
      return c.total();
    },
    async discard() {
      if (done) return;
      await handle.close().catch(() => undefined);
      await rm(part, { force: true });
    },
  };
}
