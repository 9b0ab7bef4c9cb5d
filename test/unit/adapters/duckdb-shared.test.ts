/**
 * The DuckDB target in shared mode (cluster nodes on one tables file): each operation opens the
 * file and closes it again, and waits while another process holds it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DuckDbTarget } from '../../../src/adapters/target/duckdb-target.js';
import { TableService } from '../../../src/storage/tables.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];

/** Another process that opens the file, says "locked", and keeps it until `holdMs` passed. */
async function holdFile(path: string, holdMs: number): Promise<ChildProcess> {
  const code = `
    const { DuckDBInstance } = require('@duckdb/node-api');
    DuckDBInstance.create(${JSON.stringify(path)}).then((db) => {
      process.stdout.write('locked\\n');
      setTimeout(() => { db.closeSync(); process.exit(0); }, ${holdMs});
    });`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    child.on('exit', () => reject(new Error('the holder exited early')));
  });
  return child;
}

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('DuckDbTarget shared mode', () => {
  it('lets another process open the file between operations, and waits while it holds it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-duck-shared-'));
    dirs.push(dir);
    const path = join(dir, 'tables.duckdb');
    const target = await DuckDbTarget.open(path, { shared: true });
    const tables = new TableService(target, 1);
    await tables.ensureTable('in.c-shared.t', [{ name: 'a' }], { metadata: {} });
    await target.insertRows('in.c-shared.t', [['1']]);

    // Between operations the file is free: another process can open it.
    const holder = await holdFile(path, 700);
    const started = Date.now();
    await target.insertRows('in.c-shared.t', [['2']]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(holder.exitCode ?? (await new Promise((r) => holder.on('exit', r)))).toBe(0);
    expect(await target.preview('in.c-shared.t', 10)).toEqual([['1'], ['2']]);
    await target.close();
  });

  it('gives up with a clear error when the file stays locked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-duck-shared-'));
    dirs.push(dir);
    const path = join(dir, 'tables.duckdb');
    const target = await DuckDbTarget.open(path, { shared: true, lockWaitMs: 300 });
    await holdFile(path, 10_000);
    await expect(target.rowCount('in.c-x.y')).rejects.toThrow(/stayed locked by another process for 300 ms/);
    await target.close();
  });

  it('lets nodes start together on a new file: none sees it half written, no temporary file is left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-duck-shared-'));
    dirs.push(dir);
    const path = join(dir, 'tables.duckdb');
    const code = `
      import { DuckDbTarget } from ${JSON.stringify(resolve('src/adapters/target/duckdb-target.ts'))};
      const target = await DuckDbTarget.open(${JSON.stringify(path)}, { shared: true });
      await target.createBucket({ id: 'in.c-' + process.pid, stage: 'in', name: String(process.pid) });
      await target.close();
      process.stdout.write('opened');`;
    const runs = Array.from({ length: 4 }, () => new Promise<string>((res) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      child.on('exit', () => res(out));
    }));
    expect(await Promise.all(runs)).toEqual(['opened', 'opened', 'opened', 'opened']);
    expect(readdirSync(dir)).toEqual(['tables.duckdb']);
    const target = await DuckDbTarget.open(path, { shared: true });
    expect(await target.listBuckets()).toHaveLength(4);
    await target.close();
  }, 60_000);
});
