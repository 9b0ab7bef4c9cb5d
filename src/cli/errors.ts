/**
 * Expected failures of the client commands (a bad command line, an error answer, no server):
 * printed as one `sluice: <message>` line without a stack trace, with their exit code.
 */
export class CliError extends Error {
  /** 1: the request failed; 2: the command line is wrong (unknown option, bad value). */
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/**
 * Runs a command body and turns its CliError into the `sluice: ...` line and exit code; other
 * errors are bugs and go up with their stack.
 */
export async function reportErrors(io: CliIo, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    io.stderr.write(`sluice: ${err.message}\n`);
    return err.exitCode;
  }
}
