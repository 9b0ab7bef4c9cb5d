/**
 * The data directory is private whatever the umask: `sluice serve` started with umask 000 on a
 * data directory an older version left readable by all, then used (a source and a sink, an event
 * through to staging, a job, an export). Every folder in it is 0700 and every file 0600: LMDB's
 * metadata and event log, the DuckDB file, local slices, staged files, exported files, and what
 * was there before. Requires `npm run build` (dist/main.js).
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService, until } from '../helpers/child-service.js';

let dataDir: string;
let svc: ChildService;

/** Every entry under `dir` with its permission bits, symbolic links left out. */
function modes(dir: string): Map<string, { mode: number; directory: boolean }> {
  const out = new Map<string, { mode: number; directory: boolean }>();
  const walk = (path: string) => {
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      return; // removed meanwhile (a DuckDB WAL after a checkpoint)
    }
    if (stat.isSymbolicLink()) return;
    out.set(relative(dataDir, path) || '.', { mode: stat.mode & 0o777, directory: stat.isDirectory() });
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-modes-'));
  // What an older version under umask 022 (or 000) left: readable, even writable, by all.
  mkdirSync(join(dataDir, 'files', 'old-export'), { recursive: true });
  writeFileSync(join(dataDir, 'files', 'old-export', 'part.csv'), 'a\n');
  writeFileSync(join(dataDir, 'master-token'), 'an-old-token\n');
  for (const [path, mode] of [['.', 0o777], ['files', 0o755], ['files/old-export', 0o777], ['files/old-export/part.csv', 0o666], ['master-token', 0o644]] as const) {
    chmodSync(join(dataDir, path), mode);
  }
  svc = new ChildService({ dataDir, umask: '000', env: { SLUICE_CHECK_INTERVAL: '100ms' } });
  await svc.start();
}, 60_000);

afterAll(async () => {
  await svc?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the data directory', () => {
  it('is 0700 with files 0600 inside, what was there before included, though the service started with umask 000', async () => {
    const path = await svc.createSource('shop');
    await svc.createSink('shop', 'raw', 'in.c-modes.raw', [{ type: 'body', name: 'body' }], { 'storage.level.staging.upload.trigger.interval': '1s' });
    expect((await svc.send(path, '{"n":1}')).answered).toBe(true);
    // The slice written locally, then uploaded to staging.
    await until('a staged slice', async () => ((await svc.sinkStatistics('shop', 'raw')).levels?.staging?.recordsCount >= 1 ? true : undefined), 30_000);
    // A job (its folder and process) and an export (a Storage file).
    const job = await svc.call('POST', '/jobs', { component: 'sluice.echo', configData: { parameters: { destination: 'in.c-modes.echo', greeting: 'hi' } } });
    expect(job.status).toBe(201);
    await until('the job', async () => ((await svc.call('GET', `/jobs/${job.json.id}`)).json.isFinished ? true : undefined), 30_000);
    const exported = await svc.call('POST', '/v2/storage/tables/in.c-modes.echo/export-async', {});
    await until('the export', async () => ((await svc.call('GET', new URL(exported.json.url).pathname)).json.status === 'success' ? true : undefined), 30_000);

    const entries = modes(dataDir);
    // What the service made: the stores, the tables, the slices, staging and exports.
    for (const name of ['metadata/data.mdb', 'metadata/lock.mdb', 'log/data.mdb', 'log/lock.mdb', 'tables.duckdb']) {
      expect(entries.has(name), `${name} is missing`).toBe(true);
    }
    for (const folder of ['local', 'staging', 'files']) {
      expect([...entries.keys()].some((k) => k.startsWith(`${folder}/`) && !entries.get(k)!.directory), `no file under ${folder}/`).toBe(true);
    }
    const wrong = [...entries].filter(([, e]) => e.mode !== (e.directory ? 0o700 : 0o600)).map(([name, e]) => `${name} ${e.mode.toString(8)}`);
    expect(wrong).toEqual([]);
    // And what it creates from now on, whatever starts it: the process's own umask.
    const status = readFileSync(`/proc/${svc.pid}/status`, 'utf8');
    expect(/^Umask:\s*(\d+)$/m.exec(status)?.[1]).toBe('0077');
  });
});
