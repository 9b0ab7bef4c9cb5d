/**
 * `sluice jsonnet`: the jsonnet command line on the Sluice compiler.
 *
 *   sluice jsonnet [options] <file>        evaluate a file (`-` reads standard input)
 *   sluice jsonnet [options] -e <code>     evaluate a snippet
 *
 * Output JSON on stdout (or in the -o file), or with -S the resulting string itself; errors on stderr with exit code 1, first line
 * `RUNTIME ERROR: ...` or `STATIC ERROR: ...` as libjsonnet prints it. Imports are resolved
 * relative to the importing file, then in the -J directories (right-most wins), then in the
 * directories of JSONNET_PATH. The hidden `--engine libjsonnet` evaluates with libjsonnet 0.20
 * (in a child process) instead, for comparisons.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseByteSize, parseDuration } from './units.js';
import { ENGINE_NAMES, EngineError, createEngine, type EngineName, type ExtVar, type JsonnetEngine } from './engines.js';
import { CLI_LIMIT_NAMES, DEFAULT_LIMITS, V8_MAX_ARRAY_LENGTH, V8_MAX_STRING_LENGTH, type JsonnetLimits } from './limits.js';

export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

export interface CliDeps {
  /** Creates the engine the arguments select. Default: createEngine() of engines.ts. */
  createEngine?: (name: EngineName) => JsonnetEngine;
  env?: NodeJS.ProcessEnv;
  /** Reads the program file, or standard input for `-`. */
  readFile?: (path: string) => string;
  writeFile?: (path: string, text: string) => void;
}

export const JSONNET_USAGE = `Usage: sluice jsonnet [options] <filename>
       sluice jsonnet [options] -e <code>

Options:
  -h / --help                 this message
  -e / --exec                 treat the argument as code rather than a file name
  -J / --jpath <dir>          library search directory (right-most wins); also JSONNET_PATH
  -o / --output-file <file>   write the output to a file rather than stdout
  -S / --string               expect a string result and write it as is, not as JSON
  -s / --max-stack <n>        number of allowed stack frames
  --max-array-length <n>      elements of one array (default ${DEFAULT_LIMITS.maxArrayLength}, at most ${V8_MAX_ARRAY_LENGTH})
  --max-string-length <n>     characters of one string (default ${DEFAULT_LIMITS.maxStringLength}, at most ${V8_MAX_STRING_LENGTH})
  --max-allocation <size>     estimated memory the evaluation builds: arrays, strings, objects
                              (default ${DEFAULT_LIMITS.maxAllocationBytes / 1024 ** 2}MB; units B, KB, MB, GB)
  --timeout <duration>        time budget of the evaluation, e.g. 500ms, 10s, 5m (default none)
  -V / --ext-str <var>[=<val>]      external variable as a string (no value: from the environment)
  --ext-str-file <var>=<file>       external variable as a string read from a file
  --ext-code <var>[=<code>]         external variable as Jsonnet code
  --ext-code-file <var>=<file>      external variable as Jsonnet code read from a file
  -A / --tla-str <var>[=<val>]      top-level argument as a string
  --tla-str-file <var>=<file>       top-level argument as a string read from a file
  --tla-code <var>[=<code>]         top-level argument as Jsonnet code
  --tla-code-file <var>=<file>      top-level argument as Jsonnet code read from a file
  --                          the next argument is the file name, even if it starts with -
`;

/** Thrown for bad command lines; printed as `ERROR: <message>` with exit code 1. */
class UsageError extends Error {}

interface Parsed {
  help: boolean;
  exec: boolean;
  string: boolean;
  input: string | undefined;
  outputFile: string | undefined;
  engine: EngineName;
  jpaths: string[];
  maxStack: number | undefined;
  limits: Partial<JsonnetLimits>;
  extVars: Record<string, ExtVar>;
  tlaVars: Record<string, ExtVar>;
}

type VarOption = { target: 'extVars' | 'tlaVars'; kind: ExtVar['kind']; fromFile: boolean };

const VAR_OPTIONS: Record<string, VarOption> = {
  '-V': { target: 'extVars', kind: 'string', fromFile: false },
  '--ext-str': { target: 'extVars', kind: 'string', fromFile: false },
  '--var': { target: 'extVars', kind: 'string', fromFile: false },
  '--ext-str-file': { target: 'extVars', kind: 'string', fromFile: true },
  '--ext-code': { target: 'extVars', kind: 'code', fromFile: false },
  '--code-var': { target: 'extVars', kind: 'code', fromFile: false },
  '--ext-code-file': { target: 'extVars', kind: 'code', fromFile: true },
  '-A': { target: 'tlaVars', kind: 'string', fromFile: false },
  '--tla-str': { target: 'tlaVars', kind: 'string', fromFile: false },
  '--tla-str-file': { target: 'tlaVars', kind: 'string', fromFile: true },
  '--tla-code': { target: 'tlaVars', kind: 'code', fromFile: false },
  '--tla-code-file': { target: 'tlaVars', kind: 'code', fromFile: true },
};

/** The limits' flags (CLI_LIMIT_NAMES) and how each parses its value. */
const LIMIT_OPTIONS: Record<string, { key: keyof JsonnetLimits; parse: (text: string) => number | undefined; max?: number }> = {
  [CLI_LIMIT_NAMES.maxArrayLength]: { key: 'maxArrayLength', parse: count, max: V8_MAX_ARRAY_LENGTH },
  [CLI_LIMIT_NAMES.maxStringLength]: { key: 'maxStringLength', parse: count, max: V8_MAX_STRING_LENGTH },
  [CLI_LIMIT_NAMES.maxAllocationBytes]: { key: 'maxAllocationBytes', parse: (t) => positiveOrUndefined(parseByteSize(t)) },
  [CLI_LIMIT_NAMES.timeoutMs]: { key: 'timeoutMs', parse: (t) => positiveOrUndefined(parseDuration(t)) },
};

function count(text: string): number | undefined {
  return /^\d+$/.test(text) ? positiveOrUndefined(Number(text)) : undefined;
}

function positiveOrUndefined(n: number | undefined): number | undefined {
  return n !== undefined && n > 0 ? n : undefined;
}

const VALUE_OPTIONS = new Set([
  '-J', '--jpath', '-o', '--output-file', '-s', '--max-stack', '--engine', ...Object.keys(LIMIT_OPTIONS), ...Object.keys(VAR_OPTIONS),
]);

function parseArgs(argv: string[], env: NodeJS.ProcessEnv, readFile: (path: string) => string): Parsed {
  const p: Parsed = {
    help: false,
    exec: false,
    string: false,
    input: undefined,
    outputFile: undefined,
    engine: 'sluice',
    jpaths: [],
    maxStack: undefined,
    limits: {},
    extVars: {},
    tlaVars: {},
  };
  const setInput = (value: string) => {
    if (p.input !== undefined) throw new UsageError('only one file or snippet is allowed');
    p.input = value;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      if (i + 1 >= argv.length) throw new UsageError('-- must be followed by a file name');
      setInput(argv[++i]);
      if (i + 1 < argv.length) throw new UsageError(`unexpected argument after the file name: ${argv[i + 1]}`);
      continue;
    }
    if (arg === '-' || !arg.startsWith('-')) {
      setInput(arg);
      continue;
    }
    // `--long=value` as well as `--long value`.
    let flag = arg;
    let inline: string | undefined;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0 && VALUE_OPTIONS.has(arg.slice(0, eq))) {
      flag = arg.slice(0, eq);
      inline = arg.slice(eq + 1);
    }
    const value = (): string => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) throw new UsageError(`${flag} needs an argument`);
      return argv[++i];
    };
    switch (flag) {
      case '-h':
      case '--help':
        p.help = true;
        break;
      case '-e':
      case '--exec':
        p.exec = true;
        break;
      case '-S':
      case '--string':
        p.string = true;
        break;
      case '-J':
      case '--jpath':
        p.jpaths.push(value());
        break;
      case '-o':
      case '--output-file':
        p.outputFile = value();
        break;
      case '-s':
      case '--max-stack': {
        const v = value();
        const n = Number(v);
        if (!/^\d+$/.test(v) || n < 1) throw new UsageError(`invalid --max-stack value: ${v}`);
        p.maxStack = n;
        break;
      }
      case '--engine': {
        const v = value();
        if (!(ENGINE_NAMES as readonly string[]).includes(v)) {
          throw new UsageError(`unknown engine "${v}" (one of: ${ENGINE_NAMES.join(', ')})`);
        }
        p.engine = v as EngineName;
        break;
      }
      default: {
        const limit = LIMIT_OPTIONS[flag];
        if (limit) {
          const v = value();
          const n = limit.parse(v);
          if (n === undefined) throw new UsageError(`invalid ${flag} value: ${v}`);
          if (limit.max !== undefined && n > limit.max) throw new UsageError(`${flag} is at most ${limit.max} (V8's own limit), got ${v}`);
          p.limits[limit.key] = n;
          break;
        }
        const spec = VAR_OPTIONS[flag];
        if (!spec) throw new UsageError(`unrecognized argument: ${arg}`);
        const [name, val] = parseVar(flag, value(), spec, env, readFile);
        p[spec.target][name] = { kind: spec.kind, value: val };
      }
    }
  }
  return p;
}

/** `name=value`, `name` (value from the environment) or, for *-file options, `name=file`. */
function parseVar(flag: string, text: string, spec: VarOption, env: NodeJS.ProcessEnv, readFile: (path: string) => string): [string, string] {
  const eq = text.indexOf('=');
  if (spec.fromFile) {
    if (eq <= 0) throw new UsageError(`${flag} needs <var>=<file>`);
    const file = text.slice(eq + 1);
    try {
      return [text.slice(0, eq), readFile(file)];
    } catch (err) {
      throw new UsageError(`opening ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (eq === 0) throw new UsageError(`${flag}: missing variable name in "${text}"`);
  if (eq > 0) return [text.slice(0, eq), text.slice(eq + 1)];
  const fromEnv = env[text];
  if (fromEnv === undefined) throw new UsageError(`environment variable ${text} was undefined.`);
  return [text, fromEnv];
}

function defaultReadFile(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

/** Runs the command; resolves to the exit code. */
export async function runJsonnetCli(argv: string[], io: CliIo, deps: CliDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const readFile = deps.readFile ?? defaultReadFile;
  let args: Parsed;
  try {
    args = parseArgs(argv, env, readFile);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(`ERROR: ${err.message}\n\n${JSONNET_USAGE}`);
    return 1;
  }
  if (args.help) {
    io.stdout.write(JSONNET_USAGE);
    return 0;
  }
  if (args.input === undefined) {
    io.stderr.write(`ERROR: must give a file name or -e <code>\n\n${JSONNET_USAGE}`);
    return 1;
  }

  let code: string;
  let filename: string;
  if (args.exec) {
    code = args.input;
    filename = '<cmdline>';
  } else {
    filename = args.input === '-' ? '<stdin>' : args.input;
    try {
      code = readFile(args.input);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'No such file or directory' : (err as Error).message;
      io.stderr.write(`ERROR: opening input file: ${args.input}: ${reason}\n`);
      return 1;
    }
  }

  // JSONNET_PATH directories come before (rank below) the -J ones; its first entry wins among them.
  const envPaths = (env.JSONNET_PATH ?? '').split(':').filter((d) => d !== '').reverse();
  // Anything else a child engine writes on stderr goes to ours too.
  const engine = (deps.createEngine ?? ((name: EngineName) => createEngine(name, { onStderr: (text) => io.stderr.write(text) })))(args.engine);
  try {
    const output = await engine.evaluate(code, {
      filename,
      extVars: args.extVars,
      tlaVars: args.tlaVars,
      jpaths: [...envPaths, ...args.jpaths],
      maxStack: args.maxStack,
      limits: args.limits,
      stringOutput: args.string || undefined,
      trace: (text) => io.stderr.write(text),
    });
    if (args.outputFile !== undefined) {
      try {
        (deps.writeFile ?? ((path, text) => writeFileSync(path, text)))(args.outputFile, output);
      } catch (err) {
        io.stderr.write(`ERROR: writing to output file: ${args.outputFile}: ${(err as Error).message}\n`);
        return 1;
      }
    } else {
      io.stdout.write(output);
    }
    return 0;
  } catch (err) {
    const text = err instanceof EngineError ? err.message : `INTERNAL ERROR: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
    io.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
    return 1;
  } finally {
    await engine.close();
  }
}
