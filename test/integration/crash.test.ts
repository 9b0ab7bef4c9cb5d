/**
 * Crash safety of the record's path (docs/architecture.md, "Delivery"), against the real process
 * (`node dist/main.js serve`, built by `npm run build`):
 *
 * 1. SIGKILL while streaming: every event answered 200 lands in the table, none lands twice
 *    unless its request had to be retried (no answer), and nothing else lands. With a primary
 *    key from the event, not even a retried one lands twice: the import upserts by it.
 * 2. Disk full: the event log refuses what it cannot keep (503 in the `stream.in.` envelope,
 *    never a 200 it cannot honour), the process stays up, and everything it acknowledged before
 *    is imported after a restart.
 *
 * Loopback only; every request loop is bounded in count and time.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildService, sleep, tail } from '../helpers/child-service.js';
import { streamWhileKilling } from '../helpers/stream-while-killing.js';
import { expectEveryAckedOnce, waitAllImported } from '../helpers/exactly-once.js';
import { IMPORT_COUNT, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { readRows, TARGETS, targetServers, type TargetLocation } from '../helpers/targets.js';

/**
 * Short intervals, so that slices are closed, staged and imported all the time while events
 * stream (a kill then finds work on every level): triggers are checked every 100 ms, a file is
 * imported when it is 500 ms old and has its count of records, a slice uploaded after 1 s (the
 * sink setting's minimum) or when its file is imported.
 */
const FAST_ENV = {
  SLUICE_CHECK_INTERVAL: '100ms',
  SLUICE_UPLOAD_MIN_INTERVAL: '300ms',
  SLUICE_IMPORT_MIN_INTERVAL: '500ms',
  SLUICE_RETRY_BASE: '1s',
};
const COLUMNS = [
  { type: 'path', name: 'n', path: 'n', rawString: true },
  { type: 'body', name: 'body' },
];
/** The same, with the event's id as the table's primary key. */
const KEYED_COLUMNS = [
  { type: 'path', name: 'n', path: 'n', dataType: 'STRING', primaryKey: true },
  { type: 'body', name: 'body' },
];

const services: ChildService[] = [];
const dirs: string[] = [];
const mounts: string[] = [];

afterAll(async () => {
  for (const svc of services) await svc.dispose();
  for (const m of mounts) {
    try {
      execFileSync('umount', [m], { stdio: 'pipe' });
    } catch {
      execFileSync('umount', ['-l', m], { stdio: 'pipe' });
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

function service(dataDir: string, env: Record<string, string> = {}): ChildService {
  const svc = new ChildService({ dataDir, env: { ...FAST_ENV, ...env } });
  services.push(svc);
  return svc;
}

const servers = targetServers();

/** Rows of a table read from the target directly (a DuckDB file: the service must be stopped). */
async function tableRows(where: TargetLocation, bucket: string, table: string): Promise<{ n: string; body: string }[]> {
  return (await readRows(where, bucket, table, ['n', 'body'])) as { n: string; body: string }[];
}

function countBy(values: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return m;
}

describe.each(TARGETS)('crash safety on %s', (kind) => {
  /**
   * Streams 2400 events into a sink of `columns` while the process is killed twice, lands what
   * waits, and answers the table's rows with what the clients saw.
   */
  async function streamThroughKills(columns: unknown[], prefix: string) {
    const dataDir = tempDir(`sluice-${prefix}-`);
    const where = await servers.location(kind, dataDir);
    const started = Date.now();
    const svc = service(dataDir, where.env);
    await svc.start();
    const path = await svc.createSource(prefix);
    await svc.createSink(prefix, 'rows', `in.c-${prefix}.rows`, columns, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 50 });

    // Eight clients send back to back (eight requests in flight whenever the server is up, so a
    // kill always cuts some of them off), ~500 events/s here: 2400 events take a few seconds,
    // in which files are imported every ~0.5 s.
    const TOTAL = 2400;
    const CONCURRENCY = 8;
    const run = Math.random().toString(36).slice(2, 8);
    const ids = Array.from({ length: TOTAL }, (_, i) => `${run}-${String(i).padStart(4, '0')}`);
    // Two kills at random-ish moments: after ~800 and ~1600 acknowledged events.
    const killAt = [700 + Math.floor(Math.random() * 200), 1500 + Math.floor(Math.random() * 200)];

    const { acked, attempts, retried, unexpected, kills } = await streamWhileKilling({
      service: svc, path, ids, killAt, concurrency: CONCURRENCY, deadlineMs: 40_000,
      killAndRestart: async () => {
        const exit = await svc.kill('SIGKILL');
        await sleep(Math.floor(Math.random() * 200));
        await svc.start();
        return { exit: `${exit.code}/${exit.signal}` };
      },
    });
    const streamedMs = Date.now() - started;

    expect(unexpected, tail(svc.output())).toEqual([]);
    expect(kills.length, `kills: ${JSON.stringify(kills)}`).toBe(2);
    for (const k of kills) expect(k.exit).toBe('null/SIGKILL');
    expect(acked.size).toBe(TOTAL);

    // Land what still waits: a settings change rotates the file (imported now), and from then
    // on every file is imported as soon as it has a record and is 500 ms old.
    await svc.patchSinkSettings(prefix, 'rows', { [IMPORT_COUNT]: 1 });
    const landed = await waitAllImported(svc, prefix, 'rows', TOTAL, 15_000);
    const exit = await svc.stop();
    expect(exit, tail(svc.output())).toEqual({ code: 0, signal: null });

    const rows = await tableRows(where, `in.c-${prefix}`, 'rows');
    const why = `kills ${JSON.stringify(kills)}; imports settled: ${landed.settled}; statistics ${landed.stats}`;
    expect(rows.filter((r) => r.body !== JSON.stringify({ n: r.n })), 'rows whose body is not the one sent').toEqual([]);
    const counts = expectEveryAckedOnce(rows.map((r) => r.n), { ids, acked, attempts }, why);
    expect(landed.settled, why).toBe(true);
    return { rows, counts, landed, why, kills, retried, TOTAL, streamedMs, started };
  }

  it('keeps every acknowledged event exactly once across SIGKILLs while streaming', async () => {
    const { rows, counts, landed, why, kills, retried, TOTAL, streamedMs, started } = await streamThroughKills(COLUMNS, 'crash');
    expect(rows.length, why).toBe(landed.imported);
    console.log(
      `crash on ${kind}: ${TOTAL} events, kills ${JSON.stringify(kills)}, retried ${retried.size} (${[...retried].join(' ')}), ` +
        `duplicates ${rows.length - counts.size}, streamed in ${streamedMs} ms, total ${Date.now() - started} ms`,
    );
  }, 60_000 + POSTGRES_START_TIMEOUT_MS);

  it('keeps one row per key across SIGKILLs with a primary-keyed sink: retried events too', async () => {
    const { rows, counts, landed, why, kills, retried, TOTAL, started } = await streamThroughKills(KEYED_COLUMNS, 'crashkey');
    // Every acknowledged event once (expectEveryAckedOnce above), and no key twice, retried or not.
    expect([...counts].filter(([, n]) => n > 1), `keys in the table more than once (${why})`).toEqual([]);
    expect(rows.length, why).toBe(counts.size);
    // The sink wrote each retry too; the key folded them into one row.
    expect(landed.imported, why).toBeGreaterThanOrEqual(rows.length);
    console.log(
      `keyed crash on ${kind}: ${TOTAL} events, kills ${JSON.stringify(kills)}, retried ${retried.size}, ` +
        `records imported ${landed.imported}, rows ${rows.length}, total ${Date.now() - started} ms`,
    );
  }, 60_000 + POSTGRES_START_TIMEOUT_MS);
});

describe('crash safety of the event log', () => {
  it('refuses with 503 what the event log cannot keep when the disk is full, stays up, and keeps what it acknowledged', async () => {
    const started = Date.now();
    const dataDir = tempDir('sluice-diskfull-');
    // The whole data dir (event log, slices, staging, DuckDB, metadata) on a small tmpfs. The
    // event log refuses appends while its file system has less than 256 MiB free (the default
    // `minFreeDiskBytes` of src/adapters/event-log/lmdb-log.ts, which keeps LMDB away from a
    // real ENOSPC), so the tmpfs is that plus 24 MiB: room for ~100 events of 100 KB.
    const GUARD_MIB = 256;
    const ROOM_MIB = 24;
    let mode: string;
    const env: Record<string, string> = { SLUICE_MAX_BODY_SIZE: '1MB' };
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${GUARD_MIB + ROOM_MIB}m`, 'tmpfs', dataDir], { stdio: 'pipe' });
      mounts.push(dataDir);
      mode = `tmpfs ${GUARD_MIB + ROOM_MIB} MiB`;
    } catch (err) {
      // No mount permission (not root, or in a container without CAP_SYS_ADMIN): the same
      // refusal through the log's own budget, a small LMDB map (SLUICE_LOG_MAX_SIZE). Never skip.
      env.SLUICE_LOG_MAX_SIZE = `${ROOM_MIB}MB`;
      mode = `SLUICE_LOG_MAX_SIZE=${ROOM_MIB}MB (mount failed: ${String((err as Error).message).split('\n')[0]})`;
    }
    const svc = service(dataDir, env);
    await svc.start();
    const path = await svc.createSource('full');
    await svc.createSink('full', 'rows', 'in.c-full.rows', COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 1 });

    const pad = 'x'.repeat(100 * 1024);
    const body = (id: string) => JSON.stringify({ n: id, pad });
    const acked: string[] = [];
    const refusedIds: string[] = [];
    const errors: { status: number; error: unknown; id: string }[] = [];
    const noAnswer: string[] = [];
    const sequence: number[] = [];
    const MAX_REQUESTS = 3000;
    const CONCURRENCY = 4;
    const deadline = Date.now() + 30_000;
    let sent = 0;
    let consecutiveErrors = 0;
    const done = () => sent >= MAX_REQUESTS || Date.now() > deadline || consecutiveErrors >= 40 || noAnswer.length > 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (!done()) {
          const id = `full-${String(sent++).padStart(5, '0')}`;
          const res = await svc.send(path, body(id));
          if (!res.answered) {
            noAnswer.push(`${id}: ${res.error}`);
          } else if (res.status === 200) {
            acked.push(id);
            sequence.push(200);
            consecutiveErrors = 0;
          } else {
            refusedIds.push(id);
            errors.push({ status: res.status, error: res.json?.error, id });
            sequence.push(res.status);
            consecutiveErrors++;
            await sleep(10);
          }
        }
      }),
    );
    const fs = statfsSync(dataDir);
    const freeMiB = (fs.bavail * fs.bsize) / 1024 ** 2;
    const summary = `${mode}; ${sent} sent, ${acked.length} acknowledged, ${errors.length} refused, free ${freeMiB.toFixed(1)} MiB`;

    // The process answered every request and is still up.
    expect(noAnswer, `${summary}\n${tail(svc.output())}`).toEqual([]);
    expect(svc.running, tail(svc.output())).toBe(true);
    expect(await svc.healthy()).toBe(true);
    // It took events while there was room, then refused, and kept refusing: the stream ended
    // on refusals, not on the request bound.
    expect(acked.length, summary).toBeGreaterThan(0);
    expect(errors.length, summary).toBeGreaterThan(0);
    expect(consecutiveErrors, summary).toBeGreaterThanOrEqual(40);
    expect(sequence.slice(-40).every((s) => s !== 200), summary).toBe(true);
    // Every refusal is an error of the ingestion envelope, a 5xx that tells the client to retry.
    const badErrors = errors.filter((e) => typeof e.error !== 'string' || !e.error.startsWith('stream.in.') || e.status < 500);
    expect(badErrors.slice(0, 5), summary).toEqual([]);
    expect(errors.filter((e) => e.status === 503 && e.error === 'stream.in.logFull').length, summary).toBeGreaterThan(0);

    // Still up a moment later (the actors kept working on a nearly full disk).
    await sleep(1500);
    expect(svc.running, tail(svc.output())).toBe(true);
    expect(await svc.healthy()).toBe(true);

    // A clean stop and start on the same (still full) disk; every acknowledged event is imported.
    const exit = await svc.stop();
    expect(exit, tail(svc.output())).toEqual({ code: 0, signal: null });
    await svc.start();
    const landed = await waitAllImported(svc, 'full', 'rows', acked.length, 20_000);
    expect(await svc.stop(), tail(svc.output())).toEqual({ code: 0, signal: null });

    const rows = await tableRows({ path: join(dataDir, 'tables.duckdb') }, 'in.c-full', 'rows');
    const counts = countBy(rows.map((r) => r.n));
    const why = `${summary}; imports settled: ${landed.settled}; statistics ${landed.stats}`;
    expect(acked.filter((id) => !counts.has(id)), `acknowledged but not imported (${why})`).toEqual([]);
    expect([...counts].filter(([, n]) => n > 1), 'imported more than once').toEqual([]);
    const refused = new Set(refusedIds);
    expect([...counts.keys()].filter((id) => refused.has(id)), 'refused with an error but imported').toEqual([]);
    expect(rows.filter((r) => r.body !== body(r.n)).length, 'rows with a wrong body').toBe(0);
    expect(rows.length).toBe(acked.length);
    expect(landed.settled, why).toBe(true);
    expect(rows.length, why).toBe(landed.imported);

    console.log(`disk full: ${summary}, statuses ${JSON.stringify(Object.fromEntries(countBy(sequence.map(String))))}, total ${Date.now() - started} ms`);
  }, 60_000);
});
