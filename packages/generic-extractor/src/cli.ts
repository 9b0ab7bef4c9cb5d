/**
 * `sluice extractor run --data DIR`: runs the generic extractor on `DIR/config.json` and writes
 * `DIR/out/tables/*.csv` with manifests. Progress (pages, items, bytes) and log lines go to
 * stderr; the exit code is 0 on success, 1 on a configuration or API error, 2 otherwise.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { UserError } from './errors.js';
import { counted, runExtraction, summary, type Progress } from './runner.js';

const USAGE = `Usage: sluice extractor run --data DIR [--quiet]

Runs the generic extractor (keboola.ex-generic-v2) on DIR/config.json and writes
DIR/out/tables/<bucket>.<table>.csv with a .manifest beside each.

Options:
  --data DIR   the data directory (config.json in it)
  --quiet      no progress line, only warnings and errors
`;

interface Io {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export async function runExtractorCli(argv: string[], io: Io = process): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  if (sub !== 'run') {
    io.stderr.write(`Unknown extractor command "${sub}".\n\n${USAGE}`);
    return 1;
  }
  let values: { data?: string; quiet?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { data: { type: 'string', short: 'd' }, quiet: { type: 'boolean', short: 'q' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (err) {
    io.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 1;
  }
  if (values.help) {
    io.stdout.write(USAGE);
    return 0;
  }
  if (!values.data) {
    io.stderr.write(`--data DIR is required.\n\n${USAGE}`);
    return 1;
  }
  const dataDir = resolve(values.data);
  const tty = Boolean(io.stderr.isTTY);
  let lastShown = 0;
  let lastLine = '';
  const showProgress = (p: Progress, force = false) => {
    if (values.quiet) return;
    const now = Date.now();
    if (!force && now - lastShown < (tty ? 100 : 1000)) return;
    const line = `pages ${p.pages}, items ${p.items}, bytes ${formatBytes(p.bytes)}`;
    if (line === lastLine) return;
    lastShown = now;
    lastLine = line;
    io.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
  };
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const result = await runExtraction({
      dataDir,
      signal: controller.signal,
      onProgress: (p) => showProgress(p),
      log: (message, level = 'info') => {
        if (values.quiet && level === 'info') return;
        if (tty && !values.quiet) {
          io.stderr.write('\r\x1b[K');
          lastLine = ''; // the progress line was cleared: draw it again next time
        }
        io.stderr.write(`${level === 'info' ? '' : `${level}: `}${message}\n`);
      },
    });
    showProgress(result, true);
    if (tty && !values.quiet) io.stderr.write('\n');
    for (const t of result.tables) io.stderr.write(`wrote out/tables/${t.file} (${counted(t.rows, 'row')})\n`);
    io.stderr.write(`${summary(result)}\n`);
    return 0;
  } catch (err) {
    if (tty) io.stderr.write('\n');
    if (err instanceof UserError) {
      io.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    io.stderr.write(`application error: ${(err as Error)?.stack ?? String(err)}\n`);
    return 2;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
