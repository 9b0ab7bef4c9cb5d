/**
 * `sluice jsonnet` as a process (the sources through tsx, as test/integration/cli-help.test.ts
 * runs them): the issue's `std.length(std.range(0, 1e9))`, which grew the process until V8
 * aborted it, exits 1 at once with the limit's message, and the flag raises the limit.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

const ROOT = resolve(__dirname, '../..');

function sluice(args: string[]): Promise<Run> {
  return new Promise((done, fail) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr, ms: Date.now() - started }));
  });
}

describe('sluice jsonnet under its limits', () => {
  it('std.length(std.range(0, 1e9)) exits 1 with the limit and its flag, about as fast as a trivial program', async () => {
    const trivial = await sluice(['jsonnet', '-e', '1']);
    expect(trivial).toMatchObject({ code: 0, stdout: '1\n' });
    const r = await sluice(['jsonnet', '-e', 'std.length(std.range(0, 1e9))']);
    expect(r.signal).toBeNull();
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
    expect(raised).toMatchObject({ code: 0, stdout: '11000000\n', stderr: '' });
  });
});
