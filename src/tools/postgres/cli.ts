/**
 * `sluice postgres start|stop|status`: a local PostgreSQL server for development, from the
 * binaries `npm install` brings (see server-process.ts). `start` prints progress on stderr and,
 * as its last two lines on stdout, the `--target` URL and a `psql` line, so that
 * `TARGET=$(sluice postgres start | head -1)` works.
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_POSTGRES_PORT, postgresStatus, startPostgres, stopPostgres } from './server-process.js';

export const POSTGRES_USAGE = `Usage: sluice postgres <start|stop|status> [options]

  start    initdb once (user and database "sluice", a random password), start PostgreSQL in
           the background on 127.0.0.1; prints the --target URL and a psql line as the last
           two lines
  stop     stop the server (fast shutdown; --purge also deletes its folder and data)
  status   print whether the server runs, and its URL (exit code 0: running, 3: not running)

Options (flag, environment variable):
  --dir <path>       SLUICE_POSTGRES_DIR    the server's folder (default <data-dir>/postgres)
  --data-dir <path>  SLUICE_DATA_DIR        Sluice's data directory (default ./data)
  --port <n>         SLUICE_POSTGRES_PORT   port (default: the last one if free, else ${DEFAULT_POSTGRES_PORT} if free, else a free one)
  --purge                                   with stop: delete the server's folder
`;

/** The exit code of a wrong command line, as the other commands. */
const USAGE_ERROR = 2;
/** status: no server runs (as the LSB's "program is not running"). */
const NOT_RUNNING = 3;

interface Io {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  /** " Did you mean start?" for a mistyped name, or ''; main.ts gives the project's (tools/ import nothing of it). */
  didYouMean?: (given: string, names: readonly string[]) => string;
}

const COMMANDS = ['start', 'stop', 'status'] as const;
const OPTIONS = ['--dir', '--data-dir', '--port', '--purge'] as const;

type Options = { dir?: string; 'data-dir'?: string; port?: string; purge?: true };

function parse(argv: string[], env: NodeJS.ProcessEnv, suggest: (given: string) => string): Options {
  const out: Options = {};
  if (env.SLUICE_POSTGRES_DIR) out.dir = env.SLUICE_POSTGRES_DIR;
  if (env.SLUICE_DATA_DIR) out['data-dir'] = env.SLUICE_DATA_DIR;
  if (env.SLUICE_POSTGRES_PORT) out.port = env.SLUICE_POSTGRES_PORT;
  for (let i = 0; i < argv.length; i++) {
    const [arg, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    if (arg === '--purge' && inline === undefined) out.purge = true;
    else if (arg === '--dir' || arg === '--data-dir' || arg === '--port') {
      const value = inline ?? argv[++i];
      if (value === undefined || value === '') throw new Error(`${arg} needs a value.`);
      out[arg.slice(2) as 'dir' | 'data-dir' | 'port'] = value;
    } else throw new Error(`Unknown option "${argv[i]}" (sluice postgres --help lists them).${suggest(arg)}`);
  }
  return out;
}

/** Runs the command; resolves to the process exit code. */
export async function runPostgresCli(argv: string[], io: Io = process): Promise<number> {
  const [command, ...rest] = argv;
  const help = (arg: string) => arg === '--help' || arg === '-h';
  if (!command || command === 'help' || help(command) || rest.some(help)) {
    (command ? io.stdout : io.stderr).write(POSTGRES_USAGE);
    return command ? 0 : USAGE_ERROR;
  }
  const suggest = (names: readonly string[]) => (given: string) => io.didYouMean?.(given, names) ?? '';
  if (!(COMMANDS as readonly string[]).includes(command)) {
    io.stderr.write(`Unknown postgres command "${command}": start, stop or status.${suggest(COMMANDS)(command)}\n\n${POSTGRES_USAGE}`);
    return USAGE_ERROR;
  }
  let opts: Options;
  try {
    opts = parse(rest, io.env, suggest(OPTIONS));
  } catch (err) {
    io.stderr.write(`${(err as Error).message}\n`);
    return USAGE_ERROR;
  }
  const dir = resolve(opts.dir ?? join(opts['data-dir'] ?? './data', 'postgres'));
  const port = opts.port === undefined ? undefined : Number(opts.port);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    io.stderr.write(`--port must be a port number (1 to 65535), got "${opts.port}".\n`);
    return USAGE_ERROR;
  }
  if (opts.purge && command !== 'stop') {
    io.stderr.write('--purge goes with stop.\n');
    return USAGE_ERROR;
  }
  const say = (line: string) => io.stderr.write(`sluice postgres: ${line}\n`);
  try {
    switch (command) {
      case 'start': {
        const started = Date.now();
        const state = await startPostgres({ dir, port, log: say });
        say(`PostgreSQL ${state.version} ready after ${((Date.now() - started) / 1000).toFixed(1)} s (pid ${state.pid}, folder ${dir}); the --target URL and a psql line:`);
        io.stdout.write(`${state.url}\npsql ${state.url}\n`);
        return 0;
      }
      case 'stop': {
        const wasRunning = await stopPostgres(dir);
        say(wasRunning ? 'PostgreSQL stopped' : `no PostgreSQL was running in ${dir}`);
        if (opts.purge) {
          rmSync(dir, { recursive: true, force: true });
          say(`${dir} deleted`);
        }
        return 0;
      }
      default: {
        const { running, state } = postgresStatus(dir);
        io.stdout.write(running && state ? `running ${state.url} (pid ${state.pid}, PostgreSQL ${state.version}, folder ${dir})\n` : `not running (folder ${dir})\n`);
        return running ? 0 : NOT_RUNNING;
      }
    }
  } catch (err) {
    say((err as Error).message);
    return 1;
  }
}
