/**
 * The command line as a newcomer meets it (the sources through tsx, so no build is needed):
 * `sluice serve --help` lists every option of src/config.ts with its environment variable and
 * default, every command answers --help, `--version`, `sluice jsonnet -S` (string output as the
 * jsonnet CLI has it, on both engines), `sluice jsonnet` under its limits (issue 21), and the
 * configuration table of docs/configuration.md agrees with the options table.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultText, loadConfig, OPTIONS } from '../../src/config.js';
import { LibjsonnetOracle, SluiceEngine, runJsonnetCli, type EngineName, type JsonnetEngine } from '@sluice/jsonnet';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const ROOT = resolve(__dirname, '../..');

/** `sluice <args>` from the sources, in the project's folder. */
function sluice(args: string[]): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/** The lines of the help text for one option: its flag line, then what it does. */
function optionLines(help: string, flag: string): [string, string] | undefined {
  const lines = help.split('\n');
  const i = lines.findIndex((l) => l.trim().split(/\s+/)[0] === flag);
  return i < 0 ? undefined : [lines[i], lines[i + 1]];
}

function expectEveryOption(help: string): void {
  for (const o of OPTIONS) {
    const found = optionLines(help, o.flag);
    expect(found, `${o.flag} is missing from the help`).toBeDefined();
    const [line, what] = found!;
    expect(line.trim().split(/\s+/).slice(0, 2), o.flag).toEqual([o.flag, o.env]);
    expect(line.trimEnd().endsWith(`default: ${defaultText(o)}`), `${o.flag}: ${line}`).toBe(true);
    expect(what.trim(), o.flag).toBe(o.help);
  }
}

describe('sluice serve --help', () => {
  it('lists every option of the table with its environment variable and default, on stdout, exit 0', async () => {
    const r = await sluice(['serve', '--help']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith('Usage: sluice serve [options]\n')).toBe(true);
    expectEveryOption(r.stdout);
    // As a reader sees a few of them.
    expect(r.stdout).toMatch(/^ {2}--port +SLUICE_PORT +default: 8000$/m);
    expect(r.stdout).toMatch(/^ {2}--data-dir +SLUICE_DATA_DIR +default: \.\/data$/m);
    expect(r.stdout).toMatch(/^ {2}--log-retention +SLUICE_LOG_RETENTION +default: 168h$/m);
    expect(r.stdout).toMatch(/^ {2}--public-api-url +SLUICE_PUBLIC_API_URL +default: http:\/\/localhost:<port>$/m);
    expect(r.stdout).toMatch(/^ {2}--kafka +SLUICE_KAFKA_BROKERS +default: none$/m);
  });

  it('-h, --help after other options and `sluice help serve` print the same; a flag value "-h" is a value', async () => {
    const [full, short, after, viaHelp, asValue] = await Promise.all([
      sluice(['serve', '--help']),
      sluice(['serve', '-h']),
      sluice(['serve', '--port=1234', '--data-dir', 'x', '--help']),
      sluice(['help', 'serve']),
      sluice(['serve', '--master-token', '-h', '--port', 'x']),
    ]);
    for (const r of [short, after, viaHelp]) expect(r).toEqual(full);
    expect(asValue.code).toBe(2);
    expect(asValue.stderr).toBe('Configuration error: port must be a non-negative integer, got "x".\n');
  });

  it('an unknown option fails and points at --help', async () => {
    const r = await sluice(['serve', '--colour', 'red']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Configuration error: Unknown option "--colour" \(sluice serve --help lists them\)/);
  });

  it('the defaults it shows are the values serve runs with when nothing is given', () => {
    const config = loadConfig([], {});
    for (const o of OPTIONS) {
      const expected = typeof o.default === 'string' ? o.parse(o.default) : o.default.value(config);
      expect(config[o.key], o.flag).toEqual(expected);
    }
    expect(config.port).toBe(8000);
    expect(config.publicApiUrl).toBe('http://localhost:8000');
    expect(config.logRetentionMs).toBe(168 * 3_600_000);
    expect(config.targetPath).toBe(resolve('data/tables.duckdb'));
  });
});

describe('sluice --help and each command', () => {
  it('sluice --help (and no command) lists the commands only, in a screen', async () => {
    const [help, bare] = await Promise.all([sluice(['--help']), sluice([])]);
    expect(help.code).toBe(0);
    expect(bare).toEqual(help);
    for (const command of ['serve', 'status', 'sources', 'sinks', 'jsonnet', 'extractor', 'kafka', 'tables', 'sql', 'secrets', 'wait', 'pull']) expect(help.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
    expect(help.stdout).not.toContain('--port');
    // A terminal's screen: 24 lines.
    expect(help.stdout.split('\n').length).toBeLessThan(24);
  });

  it('a mistyped command or option exits 2 and says what was meant', async () => {
    const [command, option, far] = await Promise.all([sluice(['serv']), sluice(['serve', '--prot', '9000']), sluice(['serve', '--colour', 'red'])]);
    expect(command.code).toBe(2);
    expect(command.stderr.split('\n')[0]).toBe('Unknown command "serv". Did you mean serve?');
    expect(option).toMatchObject({ code: 2, stderr: 'Configuration error: Unknown option "--prot" (sluice serve --help lists them). Did you mean --port?\n' });
    // Nothing close: no guess, and no list of every flag.
    expect(far).toMatchObject({ code: 2, stderr: 'Configuration error: Unknown option "--colour" (sluice serve --help lists them).\n' });
  });

  it('the development tools (kafka, postgres) exit 2 on a wrong command line too, and say what was meant', async () => {
    const [kafka, kafkaOption, postgres, postgresOption, bare] = await Promise.all([
      sluice(['kafka', 'strat']), sluice(['kafka', 'status', '--prot', '1']), sluice(['postgres', 'stat']), sluice(['postgres', 'status', '--dta-dir', 'x']), sluice(['kafka']),
    ]);
    expect(kafka.code).toBe(2);
    expect(kafka.stderr.split('\n')[0]).toBe('Unknown kafka command "strat": start, stop or status. Did you mean start?');
    expect(kafkaOption).toMatchObject({ code: 2, stderr: 'Unknown option "--prot" (sluice kafka --help lists them). Did you mean --port?\n' });
    expect(postgres.code).toBe(2);
    expect(postgres.stderr.split('\n')[0]).toBe('Unknown postgres command "stat": start, stop or status. Did you mean start?');
    expect(postgresOption).toMatchObject({ code: 2, stderr: 'Unknown option "--dta-dir" (sluice postgres --help lists them). Did you mean --data-dir?\n' });
    expect(bare).toMatchObject({ code: 2, stdout: '' });
    expect(bare.stderr).toContain('Usage: sluice kafka');
  });

  it('every command answers --help (also after a subcommand) with its usage on stdout, exit 0', async () => {
    const cases: [string[], string][] = [
      [['jsonnet', '--help'], 'Usage: sluice jsonnet'],
      [['extractor', 'run', '--help'], 'Usage: sluice extractor'],
      [['kafka', '--help'], 'Usage: sluice kafka'],
      [['kafka', 'start', '--help'], 'Usage: sluice kafka'],
      [['tables', 'export', '--help'], 'Usage: sluice tables export'],
      [['sql', '--help'], 'Usage: sluice sql'],
      [['pull', '--help'], 'Usage: sluice pull'],
      [['diff', 'somewhere', '--help'], 'Usage: sluice diff'],
      [['push', '--help'], 'Usage: sluice push'],
      [['secrets', '--help'], 'Usage: sluice secrets rotate-key'],
      [['secrets', 'rotate-key', '--help'], 'Usage: sluice secrets rotate-key'],
      [['sources', '--help'], 'Usage: sluice sources'],
      [['sinks', '--help'], 'Usage: sluice sinks'],
      [['status', '--help'], 'Usage: sluice status'],
      [['tables', '--help'], 'Usage: sluice tables'],
    ];
    const runs = await Promise.all(cases.map(([args]) => sluice(args)));
    runs.forEach((r, i) => {
      const [args, first] = cases[i];
      expect({ args, code: r.code, stderr: r.stderr, first: r.stdout.slice(0, first.length) }).toEqual({ args, code: 0, stderr: '', first });
    });
    // With their variables and defaults.
    const [, , kafka, , tables, sql] = runs;
    expect(kafka.stdout).toMatch(/--dir <path> +SLUICE_KAFKA_DIR +.*\(default .+\)/);
    for (const r of [tables, sql]) {
      expect(r.stdout).toMatch(/--url <url> +SLUICE_URL +.*\(default http:\/\/localhost:8000\)/);
      expect(r.stdout).toMatch(/--token <token> +SLUICE_TOKEN/);
    }
  });

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await sluice(['--version'])).toEqual({ code: 0, stdout: `sluice ${version}\n`, stderr: '' });
  });
});

describe('sluice jsonnet -S', () => {
  it('prints a string result as is, with a final newline (the command line)', async () => {
    const r = await sluice(['jsonnet', '-S', '-e', '"line 1\\n" + std.toString({ a: 1 }) + "\\n\\ttab"']);
    expect(r).toEqual({ code: 0, stdout: 'line 1\n{"a": 1}\n\ttab\n', stderr: '' });
    const long = await sluice(['jsonnet', '--string', '-e', 'std.manifestIni({ sections: { s: { k: "v" } } })']);
    expect(long).toEqual({ code: 0, stdout: '[s]\nk = v\n\n', stderr: '' });
  });

  it('a result that is not a string is an error, as in the jsonnet CLI (exit 1, nothing on stdout)', async () => {
    const r = await sluice(['jsonnet', '-S', '-e', '{ a: 1 }']);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'RUNTIME ERROR: expected string result, got: object\n\tDuring manifestation\t\n' });
  });

  it('the Sluice engine answers as libjsonnet does, whatever the result', async () => {
    const programs = [
      '"plain"',
      '"multi\\nline\\n"',
      '"\\u00e9\\u4e2d\\ud83d\\ude00"',
      '""',
      '[1, "a"]',
      'null',
      '42',
      'true',
      '{ a: error "not evaluated" }',
      'error "boom"',
      'function(x="tla") x',
      'std.lines(["a", "b"])',
    ];
    // One libjsonnet child for all of them (the CLI closes its engine after each run).
    const oracle = new LibjsonnetOracle();
    const engines: Record<EngineName, JsonnetEngine> = {
      sluice: new SluiceEngine(),
      libjsonnet: { name: 'libjsonnet', evaluate: (code, options) => oracle.evaluate(code, options), close: () => {} },
    };
    const run = async (engine: EngineName, code: string) => {
      let stdout = '';
      let stderr = '';
      const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
      const exit = await runJsonnetCli(['--engine', engine, '-S', '-e', code], io, { createEngine: (name) => engines[name] });
      return { exit, stdout, stderr };
    };
    try {
      for (const code of programs) {
        const [ours, reference] = [await run('sluice', code), await run('libjsonnet', code)];
        expect(ours, code).toEqual(reference);
      }
      expect(await run('sluice', '"x"')).toEqual({ exit: 0, stdout: 'x\n', stderr: '' });
    } finally {
      await oracle.close();
    }
  });
});

describe('sluice jsonnet under its limits', () => {
  /** The run and how long it took. */
  async function timed(args: string[]): Promise<Run & { ms: number }> {
    const started = Date.now();
    const r = await sluice(args);
    return { ...r, ms: Date.now() - started };
  }

  it('std.length(std.range(0, 1e9)) exits 1 with the limit and its flag, about as fast as a trivial program', async () => {
    const trivial = await timed(['jsonnet', '-e', '1']);
    expect(trivial).toMatchObject({ code: 0, stdout: '1\n' });
    // It grew the process until V8 aborted it (no exit code, SIGABRT).
    const r = await timed(['jsonnet', '-e', 'std.length(std.range(0, 1e9))']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('RUNTIME ERROR: array length 1000000001 exceeds the limit of 10000000 elements (--max-array-length)\n\t<cmdline>:1:12-29\t\n');
    // Process start-up (tsx compiling the sources) is most of both runs; the limit adds little.
    expect(r.ms - trivial.ms).toBeLessThan(2000);
  });

  it('raising --max-array-length changes the outcome of a smaller case', async () => {
    const code = 'std.length(std.range(1, 1.1e7))';
    const [limited, raised] = await Promise.all([
      sluice(['jsonnet', '-e', code]),
      sluice(['jsonnet', '--max-array-length', '12000000', '-e', code]),
    ]);
    expect(limited.code).toBe(1);
    expect(limited.stderr.split('\n')[0]).toBe('RUNTIME ERROR: array length 11000000 exceeds the limit of 10000000 elements (--max-array-length)');
    expect(raised).toEqual({ code: 0, stdout: '11000000\n', stderr: '' });
  });
});

describe("the configuration table of docs/configuration.md", () => {
  it('has a row for every option with its variable and the default that --help shows', () => {
    const readme = readFileSync(resolve(ROOT, 'docs/configuration.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Configuration\n'));
    const rows = new Map<string, string[]>();
    for (const line of section.split('\n')) {
      const m = /^\| `(--[a-z-]+)` \|/.exec(line);
      if (m && !rows.has(m[1])) rows.set(m[1], line.split('|').slice(1, -1).map((c) => c.trim()));
    }
    for (const o of OPTIONS) {
      const row = rows.get(o.flag);
      expect(row, `docs/configuration.md: no row for ${o.flag}`).toBeDefined();
      expect(row![1], o.flag).toBe(`\`${o.env}\``);
      // The cell without its backticks and an explanation in parentheses after the value.
      const shown = row![2].replace(/`/g, '').replace(/ \([^)]*\)$/, '');
      expect(shown, o.flag).toBe(defaultText(o));
    }
    for (const flag of rows.keys()) expect(OPTIONS.map((o) => o.flag), `docs/configuration.md row ${flag}`).toContain(flag);
  });
});
