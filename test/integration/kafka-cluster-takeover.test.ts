/**
 * Cluster mode hand-over against a real broker: two `sluice serve --kafka` processes (built by
 * `npm run build`) import into one target (a DuckDB file both open in turn, or PostgreSQL,
 * where they share nothing but the broker and the database). The node that processes a
 * source's topic is killed with SIGKILL while a client streams events through the other node; the other node takes the
 * topic over (after the group's session timeout) and every acknowledged event ends up in the
 * table exactly once: what the killed node had imported is not written again, what it had not
 * is read again from the topic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, tail, type ChildService } from '../helpers/child-service.js';
import { streamWhileKilling } from '../helpers/stream-while-killing.js';
import { KAFKA_START_TIMEOUT_MS } from '../helpers/kafka-broker.js';
import { importedRows, partitionsOf, readColumn, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { TARGETS, targetServers } from '../helpers/targets.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { IMPORT_COUNT, N_COLUMNS, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';

const SOURCES = ['alpha', 'beta', 'gamma'];

let cluster: TestCluster;
let nodes: ChildService[];

const servers = targetServers();

/** The node (of `among`) that processes the source's topic (one partition), by its log. */
function ownerOf(sourceId: string, among = nodes): ChildService | undefined {
  const owners = among.filter((n) => partitionsOf(n, `sluice.1.1.${sourceId}`).includes(0));
  return owners.length === 1 ? owners[0] : undefined;
}

const tableRows = (table = 'rows') => readColumn(cluster.target, 'in.c-takeover', table, 'n');

describe.each(TARGETS)('cluster hand-over on %s', (kind) => {
  beforeAll(async () => {
    cluster = await startTestCluster(['a', 'b'], {}, kind, servers);
    nodes = cluster.nodes;
  }, KAFKA_START_TIMEOUT_MS + POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => {
    await cluster?.dispose();
  }, 60_000);

  it('takes over the topics of a node killed while streaming: every acknowledged event once', async () => {
    const [a] = nodes;
    const paths = new Map<string, string>();
    for (const s of SOURCES) paths.set(s, await a.createSource(s));
    // One table, fed by the sink of the first source; the others only spread the topics over both nodes.
    await a.createSink(SOURCES[0], 'rows', 'in.c-takeover.rows', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 40 });
    for (const s of SOURCES.slice(1)) await a.createSink(s, 'rows', `in.c-takeover.${s}`, N_COLUMNS);
    // Both nodes join each topic's group; the split settles within the rebalance timeout (3 s).
    await sleep(4000);

    const TOTAL = 600;
    const run = Math.random().toString(36).slice(2, 8);
    const ids = Array.from({ length: TOTAL }, (_, i) => `${run}-${String(i).padStart(4, '0')}`);
    const path = paths.get(SOURCES[0])!;
    // First some events that the topic's owner imports (they must not come again), ...
    const before = await streamWhileKilling({ service: a, path, ids: ids.slice(0, 120), killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) });
    expect(before.unexpected).toEqual([]);
    const importedLine = (n: ChildService) => importedRows(n, 'in.c-takeover.rows') > 0;
    const importedBy = Date.now() + 40_000;
    while (!nodes.some(importedLine) && Date.now() < importedBy) await sleep(200);
    // The owner: the node that imported, and still processes the topic.
    const victim = nodes.find((n) => importedLine(n) && ownerOf(SOURCES[0], [n]) === n);
    expect(victim, nodes.map((n) => tail(n.output(), 2000)).join('\n----\n')).toBeDefined();
    const survivor = nodes.find((n) => n !== victim)!;
    // ... then the kill while the client streams the rest.
    const { acked, unexpected, kills } = await streamWhileKilling({
      service: survivor, path, ids: ids.slice(120), killAt: [60 + Math.floor(Math.random() * 120)], concurrency: 6, deadlineMs: 90_000,
      killAndRestart: async () => {
        const exit = await victim!.kill('SIGKILL');
        return { exit: `${exit.code}/${exit.signal}` };
      },
    });
    for (const id of before.acked) acked.add(id);
    expect(unexpected, tail(survivor.output())).toEqual([]);
    expect(kills).toHaveLength(1);
    expect(acked.size).toBe(TOTAL);

    // The survivor gets the topic once the group gives up on the killed member (session timeout).
    const takenBy = Date.now() + 40_000;
    while (ownerOf(SOURCES[0], [survivor]) !== survivor && Date.now() < takenBy) await sleep(250);
    expect(ownerOf(SOURCES[0], [survivor]), tail(survivor.output())).toBe(survivor);

    // Land the rest: a lower import count rotates the file; then wait until the table stops growing.
    await survivor.patchSinkSettings(SOURCES[0], 'rows', { [IMPORT_COUNT]: 1 });
    const settleBy = Date.now() + 40_000;
    let count = -1;
    let stableFor = 0;
    while (Date.now() < settleBy && stableFor < 3) {
      const table = await survivor.call('GET', '/v2/storage/tables/in.c-takeover.rows');
      const now = Number(table.json?.rowsCount ?? -1);
      stableFor = now === count && now >= TOTAL ? stableFor + 1 : 0;
      count = now;
      await sleep(700);
    }
    expect(await survivor.stop(), tail(survivor.output())).toEqual({ code: 0, signal: null });

    const rows = await tableRows();
    const counts = new Map<string, number>();
    for (const n of rows) counts.set(n, (counts.get(n) ?? 0) + 1);
    expect([...acked].filter((id) => !counts.has(id)), `acknowledged events missing\n${tail(survivor.output())}`).toEqual([]);
    expect([...counts].filter(([, n]) => n > 1), `doubled\n${tail(survivor.output())}`).toEqual([]);
    expect(rows).toHaveLength(TOTAL);
    const victimImported = importedRows(victim!, 'in.c-takeover.rows');
    expect(victimImported).toBeGreaterThan(0);
    console.log(`takeover: ${TOTAL} events, kill ${JSON.stringify(kills)}, rows the killed node imported before: ${victimImported}`);
  }, 180_000);

  it('hands its topics over when it stops: files imported, the next owner starts where it stopped', async () => {
    // Both nodes up again (the first test killed one and stopped the other).
    await Promise.all(nodes.map((n) => n.start(30_000)));
    const [a] = nodes;
    const path = await a.createSource('delta');
    await a.createSink('delta', 'rows', 'in.c-takeover.graceful', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 100_000 });
    // The first node in the topic's group gets it; when the other joins a moment later, the
    // partition can move (it goes to a node by id order). The owner counts once it stayed put
    // past the group's rebalance timeout (3 s).
    const deadline = Date.now() + 40_000;
    let leaving: ChildService | undefined;
    for (let since = Date.now(); Date.now() < deadline; await sleep(250)) {
      const now = ownerOf('delta');
      if (now !== leaving) [leaving, since] = [now, Date.now()];
      if (leaving && Date.now() - since > 4000) break;
    }
    expect(leaving, nodes.map((n) => tail(n.output(), 2000)).join('\n----\n')).toBeDefined();
    const staying = nodes.find((n) => n !== leaving)!;

    const run = Math.random().toString(36).slice(2, 8);
    const first = Array.from({ length: 150 }, (_, i) => `${run}-a${i}`);
    const sent = await streamWhileKilling({ service: staying, path, ids: first, killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) });
    expect(sent.acked.size).toBe(first.length);
    // Written into the leaving node's slices, none imported (the import count is far away).
    const writtenBy = Date.now() + 20_000;
    while ((await leaving!.sinkStatistics('delta', 'rows')).total?.recordsCount !== first.length && Date.now() < writtenBy) await sleep(200);
    expect((await leaving!.sinkStatistics('delta', 'rows')).total.recordsCount).toBe(first.length);
    // Bodies without "n" fail the mapping on the leaving node; the failures are the cluster's.
    const bad = Array.from({ length: 5 }, (_, i) => `${run}-x${i}`);
    for (const id of bad) expect((await staying.send(path, JSON.stringify({ m: id }))).answered).toBe(true);
    const failuresOf = async (n: ChildService) => (await n.call('GET', '/v1/branches/default/sources/delta/sinks/rows/failures')).json as { count: number; failures: unknown[] };
    const failedBy = Date.now() + 20_000;
    while ((await failuresOf(staying)).count < bad.length && Date.now() < failedBy) await sleep(200);
    expect((await failuresOf(staying)).count, tail(leaving!.output())).toBe(bad.length);
    expect((await failuresOf(staying)).failures).toHaveLength(bad.length);

    // (The staying node may have had the topic for a moment while the group formed: only a take-up after the stop counts.)
    const takenUpBefore = staying.output().split('\n').filter((l) => l.includes('sink taken up on this node') && l.includes('"sink":"1/delta/rows"')).length;
    expect(await leaving!.stop(), tail(leaving!.output())).toEqual({ code: 0, signal: null });
    expect(leaving!.output()).toMatch(/handed over: every file imported/);

    // The staying node takes the topic at once (the leaving member left the group) and starts after what was imported.
    const takenBy = Date.now() + 30_000;
    // The partition is assigned first; the sink is taken up a moment later (it claims the stream and reads its position).
    const takenUpLine = () => staying.output().split('\n').filter((l) => l.includes('sink taken up on this node') && l.includes('"sink":"1/delta/rows"')).slice(takenUpBefore).at(-1);
    while ((ownerOf('delta', [staying]) !== staying || !takenUpLine()) && Date.now() < takenBy) await sleep(200);
    const takenUp = takenUpLine();
    // On failure: what both nodes logged about this topic.
    const story = () => [leaving!, staying].map((n) => n.output().split('\n').filter((l) => l.includes('delta') && !l.includes('"reqId"')).join('\n')).join('\n----\n');
    expect(takenUp, story()).toBeDefined();
    expect(JSON.parse(takenUp!).start, story()).toBe(first.length + bad.length);
    // The new owner reprocesses what failed on the old one, with a mapping that takes them.
    const either = [{ type: 'template', name: 'n', rawString: true, template: { language: 'jsonnet', content: 'Body("n", Body("m", ""))' } }];
    await staying.task('PATCH', '/v1/branches/default/sources/delta/sinks/rows', { table: { mapping: { columns: either } } });
    const reprocessed = await staying.call('POST', '/v1/branches/default/sources/delta/sinks/rows/failures/reprocess', undefined, 60_000);
    expect(reprocessed.json, tail(staying.output())).toEqual({ reprocessed: bad.length, failed: 0 });
    expect((await failuresOf(staying)).failures).toEqual([]);

    const second = Array.from({ length: 50 }, (_, i) => `${run}-b${i}`);
    expect((await streamWhileKilling({ service: staying, path, ids: second, killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) })).acked.size).toBe(second.length);
    await staying.patchSinkSettings('delta', 'rows', { [IMPORT_COUNT]: 1 });
    const settleBy = Date.now() + 30_000;
    while (Number((await staying.call('GET', '/v2/storage/tables/in.c-takeover.graceful')).json?.rowsCount ?? 0) < first.length + second.length + bad.length && Date.now() < settleBy) await sleep(300);
    await sleep(1500);
    expect(await staying.stop(), tail(staying.output())).toEqual({ code: 0, signal: null });
    const rows = await tableRows('graceful');
    expect(rows.sort()).toEqual([...first, ...bad, ...second].sort());
  }, 180_000);
});
