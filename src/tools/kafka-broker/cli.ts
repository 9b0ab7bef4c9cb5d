/**
 * `sluice kafka start|stop|status`: a local single-node Kafka broker for development, tests and
 * CI (see broker-process.ts). `start` prints progress on stderr and the bootstrap address as the
 * last line on stdout, so that `BROKERS=$(sluice kafka start | tail -1)` works.
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { brokerStatus, startBroker, stopBroker } from './broker-process.js';
import { cacheRoot, DEFAULT_KAFKA_VERSION } from './distribution.js';

export const KAFKA_USAGE = `Usage: sluice kafka <start|stop|status> [options]

  start    download Apache Kafka from Maven Central with mvn (once, cached), format a
           single-node KRaft log directory and start the broker in the background; prints
           the bootstrap address (host:port) as the last line
  stop     stop the broker (--purge also deletes its folder and data)
  status   print whether the broker runs, and its bootstrap address

Options (flag, environment variable):
  --dir <path>       SLUICE_KAFKA_DIR       the broker's folder (default ${join(cacheRoot(), 'broker')})
  --port <n>         SLUICE_KAFKA_PORT      client port (default: the last one if free, else a free one)
  --host <addr>      SLUICE_KAFKA_HOST      listen and advertised address (default 127.0.0.1)
  --version <v>      SLUICE_KAFKA_VERSION   Kafka version (default ${DEFAULT_KAFKA_VERSION})
  --heap <size>      SLUICE_KAFKA_HEAP      JVM heap limit (default 384m)
  --purge                                   with stop: delete the broker's folder
Downloads are kept in SLUICE_KAFKA_CACHE (default ${cacheRoot()}).
`;

interface Io {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  /** " Did you mean start?" for a mistyped name, or ''; main.ts gives the project's (tools/ import nothing of it). */
  didYouMean?: (given: string, names: readonly string[]) => string;
}

/** The exit code of a wrong command line, as every other command's. */
const USAGE_ERROR = 2;
const COMMANDS = ['start', 'stop', 'status'] as const;
const OPTIONS = ['--dir', '--port', '--host', '--version', '--heap', '--purge'] as const;

function parse(argv: string[], env: NodeJS.ProcessEnv, suggest: (given: string) => string): Record<string, string | true> {
  const out: Record<string, string | true> = {};
  const fromEnv: [string, string][] = [['dir', 'SLUICE_KAFKA_DIR'], ['port', 'SLUICE_KAFKA_PORT'], ['host', 'SLUICE_KAFKA_HOST'], ['version', 'SLUICE_KAFKA_VERSION'], ['heap', 'SLUICE_KAFKA_HEAP']];
  for (const [key, name] of fromEnv) if (env[name]) out[key] = env[name];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--purge') out.purge = true;
    else if (/^--(dir|port|host|version|heap)$/.test(arg) && argv[i + 1] !== undefined) out[arg.slice(2)] = argv[++i];
    else if (/^--(dir|port|host|version|heap)$/.test(arg)) throw new Error(`${arg} needs a value (sluice kafka --help lists the options).`);
    else throw new Error(`Unknown option "${arg}" (sluice kafka --help lists them).${suggest(arg.replace(/=.*$/, ''))}`);
  }
  return out;
}

/** Runs the command; resolves to the process exit code. */
export async function runKafkaCli(argv: string[], io: Io = process): Promise<number> {
  const [command, ...rest] = argv;
  const help = (arg: string) => arg === '--help' || arg === '-h';
  if (!command || command === 'help' || help(command) || rest.some(help)) {
    (command ? io.stdout : io.stderr).write(KAFKA_USAGE);
    return command ? 0 : USAGE_ERROR;
  }
  const suggest = (names: readonly string[]) => (given: string) => io.didYouMean?.(given, names) ?? '';
  if (!(COMMANDS as readonly string[]).includes(command)) {
    io.stderr.write(`Unknown kafka command "${command}": start, stop or status.${suggest(COMMANDS)(command)}\n\n${KAFKA_USAGE}`);
    return USAGE_ERROR;
  }
  let opts: Record<string, string | true>;
  try {
    opts = parse(rest, io.env, suggest(OPTIONS));
  } catch (err) {
    io.stderr.write(`${(err as Error).message}\n`);
    return USAGE_ERROR;
  }
  // Absolute: the broker's JVM runs in a folder of its own, where a relative path would point elsewhere.
  const dir = resolve(typeof opts.dir === 'string' ? opts.dir : join(cacheRoot(io.env), 'broker'));
  const port = typeof opts.port === 'string' ? Number(opts.port) : undefined;
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    io.stderr.write(`--port must be a port number (1 to 65535), got "${String(opts.port)}".\n`);
    return USAGE_ERROR;
  }
  try {
    switch (command) {
      case 'start': {
        const started = Date.now();
        const state = await startBroker({
          dir,
          port,
          host: typeof opts.host === 'string' ? opts.host : undefined,
          version: typeof opts.version === 'string' ? opts.version : undefined,
          heap: typeof opts.heap === 'string' ? opts.heap : undefined,
          log: (line) => io.stderr.write(`sluice kafka: ${line}\n`),
        });
        io.stderr.write(`sluice kafka: broker ${state.version} ready after ${((Date.now() - started) / 1000).toFixed(1)} s (pid ${state.pid}, folder ${dir})\n`);
        io.stdout.write(`${state.bootstrap}\n`);
        return 0;
      }
      case 'stop': {
        const wasRunning = await stopBroker(dir);
        io.stderr.write(`sluice kafka: ${wasRunning ? 'broker stopped' : 'no broker was running'}\n`);
        if (opts.purge === true) {
          rmSync(dir, { recursive: true, force: true });
          io.stderr.write(`sluice kafka: ${dir} deleted\n`);
        }
        return 0;
      }
      case 'status': {
        const { running, state } = brokerStatus(dir);
        io.stdout.write(running && state ? `running ${state.bootstrap} (pid ${state.pid}, Kafka ${state.version})\n` : 'not running\n');
        return running ? 0 : 3;
      }
      default:
        return USAGE_ERROR;
    }
  } catch (err) {
    // One line, as every start failure: what failed, with the tool's own words; no stack.
    io.stderr.write(`sluice kafka: ${command} failed: ${(err as Error).message}\n`);
    return 1;
  }
}
