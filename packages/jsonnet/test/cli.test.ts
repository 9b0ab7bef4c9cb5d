import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJsonnetCli, type CliDeps } from '../src/cli.js';
import {
  ChildProcessEngine,
  EngineError,
  LibjsonnetOracle,
  SluiceEngine,
  createEngine,
  resolveImport,
  type EngineName,
  type EvaluateOptions,
  type JsonnetEngine,
} from '../src/engines.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `sluice jsonnet` with the libjsonnet engine unless the arguments choose another. */
async function cli(argv: string[], deps: CliDeps = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
  const args = argv.includes('--engine') ? argv : ['--engine', 'libjsonnet', ...argv];
  const code = await runJsonnetCli(args, io, deps);
  return { code, stdout, stderr };
}

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-jsonnet-cli-'));
  mkdirSync(join(dir, 'src'));
  mkdirSync(join(dir, 'lib1'));
  mkdirSync(join(dir, 'lib2'));
  writeFileSync(join(dir, 'src', 'main.jsonnet'), "{ near: import 'near.libsonnet', lib: import 'lib.libsonnet', v: std.extVar('v') }\n");
  writeFileSync(join(dir, 'src', 'near.libsonnet'), "'near'");
  writeFileSync(join(dir, 'lib1', 'lib.libsonnet'), "'lib1'");
  writeFileSync(join(dir, 'lib2', 'lib.libsonnet'), "'lib2'");
  // Relative to the importing file wins over the library paths.
  writeFileSync(join(dir, 'lib1', 'near.libsonnet'), "'lib1-near'");
  writeFileSync(join(dir, 'src', 'bad.jsonnet'), '{\n  a: 1,\n  b: error "boom",\n}\n');
  writeFileSync(join(dir, 'src', 'syntax.jsonnet'), '{ a: }\n');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sluice jsonnet: arguments (libjsonnet engine)', () => {
  it('-e snippet with --ext-str and --ext-code: JSON on stdout, exit 0', async () => {
    const r = await cli(['-e', '{ s: std.extVar("s"), c: std.extVar("c") }', '--ext-str', 's=a=b', '--ext-code', 'c={x: [1, 2]}']);
    expect(r).toEqual({ code: 0, stdout: '{\n   "c": {\n      "x": [\n         1,\n         2\n      ]\n   },\n   "s": "a=b"\n}\n', stderr: '' });
  });

  it('--exec, -V and --ext-str <var> taking the value from the environment', async () => {
    const r = await cli(['--exec', '[std.extVar("HOME_X"), std.extVar("y")]', '--ext-str', 'HOME_X', '-V', 'y=1'], { env: { HOME_X: 'from env' } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(['from env', '1']);
  });

  it('an --ext-str <var> missing from the environment is a usage error', async () => {
    const r = await cli(['-e', '1', '--ext-str', 'NOPE_NOT_SET'], { env: {} });
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe('ERROR: environment variable NOPE_NOT_SET was undefined.');
    expect(r.stdout).toBe('');
  });

  it('--tla-str, -A and --tla-code bind the parameters of a top-level function', async () => {
    const r = await cli(['-e', 'function(a, b, c) { a: a, b: b, c: c }', '--tla-str', 'a=x', '-A', 'b=y', '--tla-code', 'c=1 + 1']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ a: 'x', b: 'y', c: 2 });
  });

  it('later definitions of a variable win; --flag=value works too', async () => {
    const r = await cli(['-e', 'std.extVar("v")', '--ext-str=v=1', '--ext-code', 'v=2']);
    expect(r.stdout).toBe('2\n');
  });

  it('a file: imports relative to the file first, then -J directories, right-most wins', async () => {
    const file = join(dir, 'src', 'main.jsonnet');
    let r = await cli([file, '-J', join(dir, 'lib1'), '--jpath', join(dir, 'lib2'), '--ext-str', 'v=1']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ near: 'near', lib: 'lib2', v: '1' });
    r = await cli([file, '-J', join(dir, 'lib2'), '-J', join(dir, 'lib1'), '--ext-str', 'v=1']);
    expect(JSON.parse(r.stdout).lib).toBe('lib1');
  });

  it('JSONNET_PATH directories rank below -J', async () => {
    const file = join(dir, 'src', 'main.jsonnet');
    let r = await cli([file, '--ext-str', 'v=1'], { env: { JSONNET_PATH: join(dir, 'lib1') } });
    expect(JSON.parse(r.stdout).lib).toBe('lib1');
    r = await cli([file, '--ext-str', 'v=1', '-J', join(dir, 'lib2')], { env: { JSONNET_PATH: join(dir, 'lib1') } });
    expect(JSON.parse(r.stdout).lib).toBe('lib2');
  });

  it('a missing import is a runtime error', async () => {
    const r = await cli([join(dir, 'src', 'main.jsonnet'), '--ext-str', 'v=1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^RUNTIME ERROR: couldn't open import "lib.libsonnet": no match locally or in the Jsonnet library paths/);
  });

  it('-o writes the output to a file, nothing on stdout', async () => {
    const out = join(dir, 'out.json');
    const r = await cli(['-e', '{a: 1}', '-o', out]);
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(readFileSync(out, 'utf8')).toBe('{\n   "a": 1\n}\n');
  });

  it('--help prints the usage on stdout', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: sluice jsonnet/);
  });
});

describe('sluice jsonnet: errors and exit codes (libjsonnet engine)', () => {
  it('runtime error: stderr starts with RUNTIME ERROR and carries the stack, exit 1, stdout empty', async () => {
    const file = join(dir, 'src', 'bad.jsonnet');
    const r = await cli([file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n');
    expect(lines[0]).toBe('RUNTIME ERROR: boom');
    expect(lines[1]).toBe(`\t${file}:3:6-18\tobject <anonymous>`);
    expect(r.stderr.endsWith('\n')).toBe(true);
  });

  it('static error: STATIC ERROR with the position', async () => {
    const file = join(dir, 'src', 'syntax.jsonnet');
    const r = await cli([file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`STATIC ERROR: ${file}:1:6: unexpected: "}" while parsing terminal\n`);
  });

  it('snippets are named <cmdline> in messages', async () => {
    const r = await cli(['-e', 'error "x"']);
    expect(r.stderr).toBe('RUNTIME ERROR: x\n\t<cmdline>:1:1-10\t\n');
  });

  it('std.trace lines go to stderr, the value to stdout', async () => {
    const r = await cli(['-e', 'std.trace("hi", 1)']);
    expect(r).toEqual({ code: 0, stdout: '1\n', stderr: 'TRACE: <cmdline>:1 hi\n' });
  });

  it('-s limits the stack', async () => {
    const r = await cli(['-s', '20', '-e', 'local f(n) = if n == 0 then 0 else 1 + f(n - 1); f(100)']);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe('RUNTIME ERROR: max stack frames exceeded.');
  });

  it('a missing file', async () => {
    const r = await cli([join(dir, 'nope.jsonnet')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ERROR: opening input file: ${join(dir, 'nope.jsonnet')}: No such file or directory\n`);
  });

  it.each([
    [['--bogus', '-e', '1'], 'ERROR: unrecognized argument: --bogus'],
    [[], 'ERROR: must give a file name or -e <code>'],
    [['-e'], 'ERROR: must give a file name or -e <code>'],
    [['a.jsonnet', 'b.jsonnet'], 'ERROR: only one file or snippet is allowed'],
    [['-e', '1', '-J'], 'ERROR: -J needs an argument'],
    [['-e', '1', '--ext-code', '=1'], 'ERROR: --ext-code: missing variable name in "=1"'],
    [['-e', '1', '-s', 'x'], 'ERROR: invalid --max-stack value: x'],
    [['--engine', 'go', '-e', '1'], 'ERROR: unknown engine "go" (one of: sluice, libjsonnet)'],
  ])('usage error %j', async (argv, first) => {
    const r = await cli(argv);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe(first);
  });
});

describe('engine selection', () => {
  function recording(): { deps: CliDeps; calls: Array<{ name: EngineName; code: string; options: EvaluateOptions }>; closed: () => number } {
    const calls: Array<{ name: EngineName; code: string; options: EvaluateOptions }> = [];
    let closed = 0;
    const deps: CliDeps = {
      createEngine: (name): JsonnetEngine => ({
        name,
        evaluate: (code, options) => {
          calls.push({ name, code, options });
          return 'true\n';
        },
        close: () => {
          closed++;
        },
      }),
    };
    return { deps, calls, closed: () => closed };
  }

  it('the Sluice engine by default, libjsonnet with the hidden --engine switch; the engine is closed', async () => {
    const rec = recording();
    let r = await runJsonnetCli(['-e', 'true', '-J', 'a', '-J', 'b', '--tla-str', 't=1'], { stdout: { write: () => true }, stderr: { write: () => true } }, { ...rec.deps, env: {} });
    expect(r).toBe(0);
    expect(rec.calls[0]).toEqual({
      name: 'sluice',
      code: 'true',
      options: {
        filename: '<cmdline>',
        extVars: {},
        tlaVars: { t: { kind: 'string', value: '1' } },
        jpaths: ['a', 'b'],
        maxStack: undefined,
        limits: {},
        trace: expect.any(Function),
      },
    });
    r = await runJsonnetCli(['--engine', 'libjsonnet', '-e', 'true'], { stdout: { write: () => true }, stderr: { write: () => true } }, rec.deps);
    expect(rec.calls[1].name).toBe('libjsonnet');
    expect(rec.closed()).toBe(2);
    expect(createEngine('sluice')).toBeInstanceOf(SluiceEngine);
    const oracle = createEngine('libjsonnet');
    expect(oracle).toBeInstanceOf(LibjsonnetOracle);
    await oracle.close();
  });

  it('the default engine reports its own errors as Jsonnet errors (EngineError), never throws out of the CLI', async () => {
    // Whatever the state of the compiler: either it evaluates, or the CLI exits 1 with a message.
    const r = await cli(['--engine', 'sluice', '-e', '{ a: 1 + 1 }']);
    if (r.code === 0) expect(JSON.parse(r.stdout)).toEqual({ a: 2 });
    else {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.length).toBeGreaterThan(0);
    }
  });
});

describe('engines', () => {
  it('resolveImport: base directory + path as given, then library paths last first', () => {
    const cwd = dir;
    const near = resolveImport('src/', 'near.libsonnet', [], cwd);
    expect(near).toMatchObject({ path: 'src/near.libsonnet', content: "'near'" });
    expect(Array.from(near!.bytes)).toEqual([...Buffer.from("'near'")]);
    expect(resolveImport('', 'lib.libsonnet', ['lib1', 'lib2/'], cwd)).toMatchObject({ path: 'lib2/lib.libsonnet', content: "'lib2'" });
    expect(resolveImport('src/', 'lib.libsonnet', ['lib2', 'lib1'], cwd)?.path).toBe('lib1/lib.libsonnet');
    expect(resolveImport('src/', 'missing.libsonnet', ['lib1'], cwd)).toBeUndefined();
    expect(resolveImport('', '', ['lib1'], cwd)).toBeUndefined();
    // A directory is not a file.
    expect(resolveImport('', 'src', [], cwd)).toBeUndefined();
  });

  it('the oracle survives an evaluation that exceeds its time limit', async () => {
    // The limit is every evaluation's: wide enough that the next one's new child starts within it on a loaded machine
    // (a CI run saw 1.5 s passed by the restart alone); the slow one takes minutes.
    const oracle = new ChildProcessEngine({ engine: 'libjsonnet', timeoutMs: 4000 });
    try {
      const slow = oracle.evaluate('std.foldl(function(a, b) a + b, std.range(1, 50000000), 0)', {});
      await expect(slow).rejects.toBeInstanceOf(EngineError);
      await expect(slow).rejects.toMatchObject({ internal: true, message: expect.stringMatching(/exceeded 4000 ms/) });
      expect(await oracle.evaluate('1 + 1', {})).toBe('2\n');
    } finally {
      await oracle.close();
    }
  });

  it('an input that aborts libjsonnet fails that evaluation only; the next one gets a new child', async () => {
    const oracle = new LibjsonnetOracle();
    try {
      const crash = oracle.evaluate('std.parseYaml("a: 1\\n---\\nb: 2")', {});
      await expect(crash).rejects.toMatchObject({
        name: 'EngineError',
        internal: true,
        message: expect.stringMatching(/^INTERNAL ERROR: the libjsonnet process died \(SIGABRT\): ERROR: no doc processing for JSON/),
      });
      expect(await oracle.evaluate('"alive"', {})).toBe('"alive"\n');
    } finally {
      await oracle.close();
    }
    const r = await cli(['-e', 'std.parseYaml("!!binary x")']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^INTERNAL ERROR: the libjsonnet process died \(SIGABRT\)/);
  });

  it('the oracle evaluates in parallel children and keeps results apart', async () => {
    const oracle = new LibjsonnetOracle({ concurrency: 2 });
    try {
      const out = await Promise.allSettled([1, 2, 3, 4].map((i) => oracle.evaluate(i === 3 ? 'error "three"' : `${i} * 10`, {})));
      expect(out.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message.split('\n')[0]))).toEqual([
        '10\n',
        '20\n',
        'RUNTIME ERROR: three',
        '40\n',
      ]);
    } finally {
      await oracle.close();
    }
  });
});

describe('engine lifecycle', () => {
  it('close() fails the evaluations still running or queued', async () => {
    const oracle = new LibjsonnetOracle();
    const settled = (p: Promise<string>) => p.then((v) => v, (e: unknown) => e);
    const running = settled(oracle.evaluate('std.foldl(function(a, b) a + b, std.range(1, 50000000), 0)', {}));
    const queued = settled(oracle.evaluate('1', {}));
    await new Promise((r) => setTimeout(r, 200));
    await oracle.close();
    expect(await running).toMatchObject({ internal: true, message: 'INTERNAL ERROR: engine closed' });
    expect(await queued).toMatchObject({ internal: true, message: 'INTERNAL ERROR: engine closed' });
  });
});
