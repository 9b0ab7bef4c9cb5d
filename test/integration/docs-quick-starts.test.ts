/**
 * The README's first steps and every docs page's quick start, run as written: each page's shell
 * blocks (test/helpers/doc-blocks.ts says which, and how a block states what its commands print)
 * run in one bash process in a fresh folder, against a fresh `sluice serve` on the documented
 * address (http://localhost:8000, data in ./data), with `npx sluice` resolving to this tree's
 * command line. A command that fails, or a check whose text is not in the output, fails here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { docScript, outputHas, outputsPerSegment, type DocScript } from '../helpers/doc-blocks.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const DOCUMENTED_PORT = 8000;
const PAGE_TIMEOUT_MS = 240_000;

/** Pages whose topic has no quick start a fresh server can run (say why in the page itself). */
const WITHOUT_QUICK_START = new Set([
  'architecture.md', // no commands: how the code is laid out
  'benchmarks.md', // each run takes minutes
  'contributing.md', // its commands are npm test itself
]);

function scripts(): DocScript[] {
  const found: DocScript[] = [];
  const readme = docScript('README.md', readFileSync(join(ROOT, 'README.md'), 'utf8'), 'First steps');
  if (readme) found.push(readme);
  for (const name of readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort()) {
    const script = docScript(`docs/${name}`, readFileSync(join(ROOT, 'docs', name), 'utf8'), 'Quick start');
    if (script) found.push(script);
  }
  return found;
}

/** Whether a command is on the PATH. */
function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, command)));
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(false));
    probe.listen(port, () => probe.close(() => done(true)));
  });
}

/** A folder like a checkout's root for the reader: `npx sluice` is this tree's command line. */
function readersFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-doc-'));
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(join(ROOT, 'bin', 'sluice.js'), join(dir, 'node_modules', '.bin', 'sluice'));
  return dir;
}

/** The environment of the server and the blocks: no SLUICE_* setting of the test run leaks in. */
function readersEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SLUICE_') && !k.startsWith('VITEST')) env[k] = v;
  // The gRPC listener's default port may be taken by a Collector of the machine; no page uses it.
  env.SLUICE_OTLP_GRPC_PORT = '0';
  return env;
}

function startServer(dir: string): Promise<ChildProcess> {
  const server = spawn(process.execPath, [join(ROOT, 'dist', 'main.js'), 'serve'], { cwd: dir, env: readersEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`the server did not get ready in 30 s:\n${log}`)), 30_000);
    const read = (chunk: Buffer): void => {
      log += chunk.toString();
      if (log.includes('"msg":"sluice is ready')) {
        clearTimeout(timer);
        done(server);
      }
    };
    server.stdout!.on('data', read);
    server.stderr!.on('data', read);
    server.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the server exited (${code}) before it was ready:\n${log}`));
    });
  });
}

function runScript(dir: string, script: string): Promise<{ code: number | null; output: string }> {
  writeFileSync(join(dir, 'quick-start.sh'), `exec 2>&1\n${script}`);
  // Its own process group, so that what the blocks start in the background stops with it.
  const bash = spawn('bash', ['quick-start.sh'], { cwd: dir, env: readersEnv(), stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  running.push(bash);
  let output = '';
  bash.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((done) => {
    const timer = setTimeout(() => killGroup(bash), PAGE_TIMEOUT_MS);
    bash.once('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const running: ChildProcess[] = [];
const folders: string[] = [];

afterEach(async () => {
  // Gone before the next page: it listens on the same port.
  await Promise.all(running.splice(0).map((child) => {
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((done) => child.once('exit', done));
    killGroup(child);
    child.kill('SIGKILL');
    return exited;
  }));
  for (const dir of folders.splice(0)) {
    // A page that started PostgreSQL or a Kafka broker (in ./data, as the pages do) leaves it running: stop it.
    const stops = [
      existsSync(join(dir, 'data', 'postgres', 'postgres.json')) && ['postgres', 'stop', '--data-dir', join(dir, 'data')],
      existsSync(join(dir, 'data', 'kafka')) && ['kafka', 'stop', '--dir', join(dir, 'data', 'kafka')],
    ].filter((args): args is string[] => args !== false);
    for (const args of stops) await new Promise((done) => spawn(process.execPath, [join(ROOT, 'bin', 'sluice.js'), ...args], { stdio: 'ignore' }).once('close', done));
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('the shell blocks of the README and docs/, run as written', () => {
  const pages = scripts();

  it('finds the README\'s first steps and a quick start on every topic page', () => {
    expect(pages.map((p) => p.file)).toContain('README.md');
    const topics = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !WITHOUT_QUICK_START.has(f));
    for (const topic of topics) expect(pages.map((p) => p.file), `docs/${topic} has no "## Quick start"`).toContain(`docs/${topic}`);
    for (const page of pages) {
      expect(page.blocks, `${page.file}: no sh block in "${page.section}"`).toBeGreaterThan(0);
      expect(page.checks.length, `${page.file}: no "# → " check in "${page.section}"`).toBeGreaterThan(0);
    }
  });

  describe.sequential.each(pages.map((p) => [p.file, p] as const))('%s', (_file, page) => {
    const missing = page.needs.filter((command) => !onPath(command));
    it.skipIf(missing.length > 0)(`runs "${page.section}" as written${missing.length > 0 ? ` (not run here: no ${missing.join(', ')} on the PATH)` : ''}`, { timeout: PAGE_TIMEOUT_MS + 60_000 }, async () => {
      expect(await portIsFree(DOCUMENTED_PORT), `port ${DOCUMENTED_PORT}, where the docs' server listens, is taken`).toBe(true);
      const dir = readersFolder();
      folders.push(dir);
      if (page.server) running.push(await startServer(dir));
      const { code, output } = await runScript(dir, page.script);
      const outputs = outputsPerSegment(output, (page.checks.at(-1)?.segment ?? -1) + 1);
      page.checks.forEach((check) => {
        const seen = outputs[check.segment];
        expect(seen, `${check.where}: the commands before this check did not finish (exit ${code}). Output:\n${output}`).toBeDefined();
        expect(outputHas(seen!, check.expected), `${check.where}: expected "${check.expected}" in:\n${seen}`).toBe(true);
      });
      expect(code, `the blocks exited with ${code}. Output:\n${output}`).toBe(0);
    });
  });
});
