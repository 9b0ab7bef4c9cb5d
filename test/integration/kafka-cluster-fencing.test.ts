/**
 * Cluster mode: a node that comes back after a SIGKILL must not import the files it had not
 * imported before it died. The node that took its topic over has read those records again from
 * the topic and imported them; the old files are stale. Two `sluice serve --kafka` processes
 * import into one target (a shared DuckDB file, or PostgreSQL with nothing shared but the
 * broker and the database); the table's imports are made to fail (a column renamed behind
 * Sluice's back) so that the owner holds closed files that are not imported when it is killed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, tail, type ChildService } from '../helpers/child-service.js';
import { KAFKA_START_TIMEOUT_MS } from '../helpers/kafka-broker.js';
import { logLines, partitionsOf, readColumn, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { IMPORT_COUNT, N_COLUMNS, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';
import { runOnTarget, TARGETS, targetServers } from '../helpers/targets.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';

const TOPIC = 'sluice.1.1.fenced';

let cluster: TestCluster;
let nodes: ChildService[];
const servers = targetServers();

/** Runs SQL on the target behind the nodes' back. */
const alterTables = (sql: string) => runOnTarget(cluster.target, sql);

async function rowsCount(node: ChildService): Promise<number> {
  const table = await node.call('GET', '/v2/storage/tables/in.c-fenced.rows');
  return Number(table.json?.rowsCount ?? -1);
}

async function send(node: ChildService, path: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    const res = await node.send(path, JSON.stringify({ n: id }));
    expect(res.answered && res.status, JSON.stringify(res)).toBe(200);
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, context: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${context()}`);
    await sleep(250);
  }
}

describe.each(TARGETS)('cluster fencing on %s', (kind) => {
  beforeAll(async () => {
    cluster = await startTestCluster(['a', 'b'], {}, kind, servers);
    nodes = cluster.nodes;
  }, KAFKA_START_TIMEOUT_MS + POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => {
    await cluster?.dispose();
  }, 60_000);

  it('a node back from a SIGKILL does not import the files the node that took its topic over has read again', async () => {
    const [a] = nodes;
    const quiet = (out: string) => out.split('\n').filter((l) => !l.includes('"reqId"')).join('\n');
    const story = () => nodes.map((n) => tail(quiet(n.output()), 5000)).join('\n----\n');
    const path = await a.createSource('fenced');
    await a.createSink('fenced', 'rows', 'in.c-fenced.rows', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 10 });
    await sleep(4000); // both nodes in the topic's group

    const run = Math.random().toString(36).slice(2, 8);
    const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => `${run}-${String(from + i).padStart(3, '0')}`);
    await send(a, path, ids(0, 10));
    await until('the first file imported', async () => ((await rowsCount(a)) === 10 ? true : undefined), 30_000, story);
    const victim = await until('the owner of the topic', () => nodes.find((n) => partitionsOf(n, TOPIC).includes(0)), 20_000, story);
    const survivor = nodes.find((n) => n !== victim)!;

    // Imports fail from now on: the owner's next files stay closed, not imported.
    await alterTables('ALTER TABLE "in.c-fenced"."rows" RENAME COLUMN n TO n_moved');
    await send(survivor, path, ids(10, 30));
    await until('files that failed to import on the owner', async () => {
      const res = await victim.call('GET', '/v1/branches/default/sources/fenced/sinks/rows/statistics/files?failedFiles=true');
      return (res.json?.files?.length ?? 0) >= 1 ? true : undefined;
    }, 30_000, story);
    await victim.kill('SIGKILL');

    // The survivor takes the topic over, reads the 30 records again, and imports them once the table is right again.
    await until('the survivor owns the topic', () => (partitionsOf(survivor, TOPIC).includes(0) ? true : undefined), 40_000, story);
    await alterTables('ALTER TABLE "in.c-fenced"."rows" RENAME COLUMN n_moved TO n');
    await survivor.patchSinkSettings('fenced', 'rows', { [IMPORT_COUNT]: 1 });
    await until('40 rows', async () => ((await rowsCount(survivor)) >= 40 ? true : undefined), 60_000, story);

    // The killed node comes back with its stale files; whichever node ends up with the topic, none is imported.
    await victim.start(30_000);
    await send(survivor, path, ids(40, 5));
    await until('45 rows', async () => ((await rowsCount(survivor)) >= 45 ? true : undefined), 60_000, story);
    await sleep(8000); // the failed imports' retries are due within this (retry base 1 s)
    expect(await rowsCount(survivor), story()).toBe(45);
    // It tried, at its start, before any claim of its own: the target refused (the fence).
    expect(logLines(victim, 'file not imported: another node took its sink over and reads its records again from the event log').length, story()).toBeGreaterThan(0);

    for (const n of nodes) expect(await n.stop(), story()).toEqual({ code: 0, signal: null });
    const rows = await readColumn(cluster.target, 'in.c-fenced', 'rows', 'n');
    expect([...rows].sort()).toEqual(ids(0, 45));
  }, 240_000);
});
