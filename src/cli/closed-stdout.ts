/**
 * `sluice sql ... | head`: when the reader of standard output goes away, writes fail with EPIPE
 * as an 'error' event on process.stdout, which unhandled ends the process with a stack trace.
 * The reader chose to stop: that is no error of ours, so it is ignored (what was not read is
 * simply not written).
 */
export function isClosedPipe(err: unknown): boolean {
  return (err as { code?: string })?.code === 'EPIPE';
}

export function ignoreClosedStdout(stdout: NodeJS.WritableStream): void {
  // Installed once per process: commands run once, but tests may call them repeatedly.
  if (stdout.listeners('error').includes(onError)) return;
  stdout.on('error', onError);
}

function onError(err: unknown): void {
  if (!isClosedPipe(err)) throw err;
}
