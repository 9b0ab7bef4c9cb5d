/**
 * Source topics of several partitions against a real broker: two `sluice serve --kafka
 * --kafka-partitions 3` processes (built by `npm run build`) importing into one target (a
 * DuckDB file, or PostgreSQL with nothing shared but the broker and the database) split a
 * topic's partitions (each partition with its own sink writer, files and positions).
 * Events spread over the partitions land once; when one node is killed with SIGKILL while a
 * client streams, the other takes its partitions over and every acknowledged event is in the
 * table exactly once.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, tail, type ChildService } from '../helpers/child-service.js';
import { streamWhileKilling } from '../helpers/stream-while-killing.js';
import { KAFKA_START_TIMEOUT_MS } from '../helpers/kafka-broker.js';
import { importedRows, logLines, partitionsOf as partitionsOfTopic, readColumn, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { TARGETS, targetServers } from '../helpers/targets.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { metricValue } from '../helpers/prometheus.js';
import { IMPORT_COUNT, N_COLUMNS, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';

const TOPIC = 'sluice.1.1.wide';

let cluster: TestCluster;
let nodes: ChildService[];

const servers = targetServers();

const partitionsOf = (node: ChildService, topic = TOPIC) => partitionsOfTopic(node, topic);
const tableRows = (table = 'rows') => readColumn(cluster.target, 'in.c-wide', table, 'n');

describe.each(TARGETS)('topics of several partitions on %s', (kind) => {
  beforeAll(async () => {
    cluster = await startTestCluster(['a', 'b'], { SLUICE_KAFKA_PARTITIONS: '3' }, kind, servers);
    nodes = cluster.nodes;
  }, KAFKA_START_TIMEOUT_MS + POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => {
    await cluster?.dispose();
  }, 60_000);

  it('splits the partitions between the nodes, and the survivor of a SIGKILL takes the dead node\'s over', async () => {
    const [a, b] = nodes;
    const path = await a.createSource('wide');
    await a.createSink('wide', 'rows', 'in.c-wide.rows', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 30 });
    const admin = new Kafka({ brokers: [cluster.broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      // Created with the source's first claim (or append), with --kafka-partitions partitions.
      const createdBy = Date.now() + 20_000;
      while (!(await admin.listTopics()).includes(TOPIC) && Date.now() < createdBy) await sleep(200);
      expect((await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics[0].partitions).toHaveLength(3);
    } finally {
      await admin.disconnect();
    }
    // The split settles: every partition with exactly one node, and both nodes with some.
    const settleBy = Date.now() + 30_000;
    const split = () => [partitionsOf(a), partitionsOf(b)];
    while (Date.now() < settleBy) {
      const [pa, pb] = split();
      if (pa.length > 0 && pb.length > 0 && [...pa, ...pb].sort().join() === '0,1,2') break;
      await sleep(250);
    }
    const [pa, pb] = split();
    expect([...pa, ...pb].sort(), `${tail(a.output(), 1500)}\n----\n${tail(b.output(), 1500)}`).toEqual([0, 1, 2]);
    expect(pa.length * pb.length).toBeGreaterThan(0);
    await sleep(3500); // past the rebalance timeout: nothing moves any more
    // Each node's metrics say how many partitions it works on, and that it took them up. (On a
    // loaded machine a late rebalance may still move one: compare with the split as it is then.)
    const ownedMetric = async (node: typeof a) => metricValue((await node.call('GET', '/metrics')).text, 'sluice_cluster_partitions_owned');
    const agreeBy = Date.now() + 15_000;
    while (Date.now() < agreeBy && ((await ownedMetric(a)) !== partitionsOf(a).length || (await ownedMetric(b)) !== partitionsOf(b).length)) await sleep(250);
    for (const node of [a, b]) {
      const owned = partitionsOf(node);
      const metrics = (await node.call('GET', '/metrics')).text;
      expect(metricValue(metrics, 'sluice_cluster_partitions_owned')).toBe(owned.length);
      expect(metricValue(metrics, 'sluice_cluster_handovers_total', { direction: 'taken' })).toBeGreaterThanOrEqual(owned.length);
      expect(metricValue(metrics, 'sluice_build_info', { event_log: 'kafka', target: kind })).toBe(1);
    }

    const TOTAL = 450;
    const run = Math.random().toString(36).slice(2, 8);
    const ids = Array.from({ length: TOTAL }, (_, i) => `${run}-${String(i).padStart(4, '0')}`);
    // Both nodes import their partitions' records before one of them dies.
    const before = await streamWhileKilling({ service: a, path, ids: ids.slice(0, 150), killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) });
    expect(before.unexpected).toEqual([]);
    const imported = (n: ChildService) => importedRows(n, 'in.c-wide.rows') > 0;
    const importedBy = Date.now() + 30_000;
    while (!(imported(a) && imported(b)) && Date.now() < importedBy) await sleep(200);
    expect([imported(a), imported(b)]).toEqual([true, true]);
    // Either node shows the sink's statistics of both: each adds what the other published.
    const statsBy = Date.now() + 20_000;
    let seen: unknown[] = [];
    while (Date.now() < statsBy) {
      const rowsNow = Number((await a.call('GET', '/v2/storage/tables/in.c-wide.rows')).json?.rowsCount ?? -1);
      const [sa, sb] = [await a.sinkStatistics('wide', 'rows'), await b.sinkStatistics('wide', 'rows')];
      seen = [rowsNow, sa, sb];
      if (sa.total.recordsCount === 150 && JSON.stringify(sa) === JSON.stringify(sb) && sa.levels.target?.recordsCount === rowsNow) break;
      await sleep(500);
    }
    const [rowsNow, sa, sb] = seen as [number, any, any];
    expect(sa.total.recordsCount, JSON.stringify(seen)).toBe(150);
    expect(sb, JSON.stringify(seen)).toEqual(sa);
    expect(sa.levels.target?.recordsCount, JSON.stringify(seen)).toBe(rowsNow);

    const { acked, unexpected, kills } = await streamWhileKilling({
      service: a, path, ids: ids.slice(150), killAt: [50 + Math.floor(Math.random() * 100)], concurrency: 6, deadlineMs: 90_000,
      killAndRestart: async () => {
        const exit = await b.kill('SIGKILL');
        return { exit: `${exit.code}/${exit.signal}`, partitionsOfKilled: pb };
      },
    });
    for (const id of before.acked) acked.add(id);
    expect(unexpected, tail(a.output())).toEqual([]);
    expect(acked.size).toBe(TOTAL);

    // The survivor gets every partition once the group gives up on the killed member.
    const takenBy = Date.now() + 40_000;
    while (partitionsOf(a).length < 3 && Date.now() < takenBy) await sleep(250);
    expect(partitionsOf(a), tail(a.output())).toEqual([0, 1, 2]);
    await a.patchSinkSettings('wide', 'rows', { [IMPORT_COUNT]: 1 });
    const doneBy = Date.now() + 40_000;
    let count = -1;
    let stable = 0;
    while (Date.now() < doneBy && stable < 3) {
      const now = Number((await a.call('GET', '/v2/storage/tables/in.c-wide.rows')).json?.rowsCount ?? -1);
      stable = now === count && now >= TOTAL ? stable + 1 : 0;
      count = now;
      await sleep(700);
    }
    expect(await a.stop(), tail(a.output())).toEqual({ code: 0, signal: null });

    const rows = await tableRows();
    const counts = new Map<string, number>();
    for (const n of rows) counts.set(n, (counts.get(n) ?? 0) + 1);
    expect([...acked].filter((id) => !counts.has(id)), `missing\n${tail(a.output())}`).toEqual([]);
    expect([...counts].filter(([, n]) => n > 1), `doubled\n${tail(a.output())}`).toEqual([]);
    expect(rows).toHaveLength(TOTAL);
    console.log(`partitions: ${TOTAL} events over 3 partitions, split a=${JSON.stringify(pa)} b=${JSON.stringify(pb)}, kill ${JSON.stringify(kills)}`);
  }, 240_000);

  it('hands partitions over to a node that joins: the old owner imports first, the new one starts after', async () => {
    const [a, b] = nodes;
    await a.start(30_000); // b stays down: a gets every partition of the new topic
    const path = await a.createSource('live');
    await a.createSink('live', 'rows', 'in.c-wide.live', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 100_000 });
    const topic = 'sluice.1.1.live';
    const ownedBy = Date.now() + 30_000;
    while (partitionsOf(a, topic).length < 3 && Date.now() < ownedBy) await sleep(200);
    expect(partitionsOf(a, topic)).toEqual([0, 1, 2]);

    const run = Math.random().toString(36).slice(2, 8);
    const first = Array.from({ length: 90 }, (_, i) => `${run}-a${i}`);
    expect((await streamWhileKilling({ service: a, path, ids: first, killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) })).acked.size).toBe(90);
    // In a's slices (statistics cover every partition), none imported.
    const writtenBy = Date.now() + 20_000;
    while ((await a.sinkStatistics('live', 'rows')).total?.recordsCount !== 90 && Date.now() < writtenBy) await sleep(200);
    expect((await a.sinkStatistics('live', 'rows')).total.recordsCount).toBe(90);

    await b.start(30_000);
    const movedBy = Date.now() + 40_000;
    while (partitionsOf(b, topic).length === 0 && Date.now() < movedBy) await sleep(250);
    const moved = partitionsOf(b, topic);
    expect(moved.length, tail(b.output())).toBeGreaterThan(0);
    // b takes a partition up only once a released it (or after the hand-over wait).
    const takenUpLines = () => logLines<{ sink: string; start: number; targetPosition?: number }>(b, 'sink taken up on this node').filter((l) => l.sink === '1/live/rows' || l.sink.startsWith('1/live/rows#'));
    const upBy = Date.now() + 30_000;
    while (takenUpLines().length < moved.length && Date.now() < upBy) await sleep(200);
    // a released what moved: its files imported first, nothing left behind.
    const released = logLines<{ partitionId: string; notImported: number }>(a, 'partition released to another node');
    // (A partition can also move back and forth while the groups settle: then a released it more than once.)
    for (const p of moved) expect(released.map((r) => r.partitionId)).toContain(p === 0 ? '1.1.live' : `1.1.live#${p}`);
    expect(released.every((r) => r.notImported === 0)).toBe(true);
    // b started each moved partition after what a imported (its target position), not at the start.
    const takenUp = takenUpLines();
    expect(takenUp.length).toBeGreaterThanOrEqual(moved.length);
    for (const t of takenUp) expect(t.start).toBe(t.targetPosition);
    expect(takenUp.reduce((n, t) => n + t.start, 0)).toBeGreaterThan(0);

    const second = Array.from({ length: 60 }, (_, i) => `${run}-b${i}`);
    expect((await streamWhileKilling({ service: b, path, ids: second, killAt: [], concurrency: 6, deadlineMs: 30_000, killAndRestart: async () => ({}) })).acked.size).toBe(60);
    await b.patchSinkSettings('live', 'rows', { [IMPORT_COUNT]: 1 });
    const doneBy = Date.now() + 40_000;
    while (Number((await b.call('GET', '/v2/storage/tables/in.c-wide.live')).json?.rowsCount ?? 0) < 150 && Date.now() < doneBy) await sleep(300);
    await sleep(1500);
    expect(await a.stop(), tail(a.output())).toEqual({ code: 0, signal: null });
    expect(await b.stop(), tail(b.output())).toEqual({ code: 0, signal: null });
    expect((await tableRows('live')).sort()).toEqual([...first, ...second].sort());
  }, 240_000);

  it('reprocesses failures and replays on every partition from any node: the owners do their part', async () => {
    const [a, b] = nodes;
    await Promise.all([a.start(30_000), b.start(30_000)]);
    const path = await a.createSource('mend');
    const user = [{ type: 'path', name: 'n', path: 'user.id', rawString: true }];
    await a.createSink('mend', 'rows', 'in.c-wide.mend', user, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 1 });
    const topic = 'sluice.1.1.mend';
    const splitBy = Date.now() + 30_000;
    while (!(partitionsOf(a, topic).length > 0 && partitionsOf(b, topic).length > 0 && [...partitionsOf(a, topic), ...partitionsOf(b, topic)].length === 3) && Date.now() < splitBy) await sleep(250);
    expect([partitionsOf(a, topic), partitionsOf(b, topic)].map((p) => p.length > 0), `${tail(a.output(), 1500)}\n----\n${tail(b.output(), 1500)}`).toEqual([true, true]);
    await sleep(3500); // past the rebalance timeout: nothing moves any more
    const since = new Date().toISOString();

    // Round robin: every partition gets some of each kind. Those with "account" fail the mapping.
    const run = Math.random().toString(36).slice(2, 8);
    const good = Array.from({ length: 12 }, (_, i) => `${run}-u${i}`);
    const bad = Array.from({ length: 12 }, (_, i) => `${run}-a${i}`);
    for (let i = 0; i < 12; i++) {
      for (const body of [{ user: { id: good[i] } }, { account: { id: bad[i] } }]) {
        const res = await a.send(path, JSON.stringify(body));
        expect(res.answered && res.status).toBe(200);
      }
    }
    const failuresOf = async (n: ChildService) => (await n.call('GET', '/v1/branches/default/sources/mend/sinks/rows/failures')).json.count as number;
    const failedBy = Date.now() + 20_000;
    while (((await failuresOf(a)) < 12 || (await failuresOf(b)) < 12) && Date.now() < failedBy) await sleep(250);
    // Every node lists every partition's failures (shared through the metadata topic).
    expect([await failuresOf(a), await failuresOf(b)]).toEqual([12, 12]);
    const rowsOf = async () => Number((await a.call('GET', '/v2/storage/tables/in.c-wide.mend')).json?.rowsCount ?? 0);
    const goodBy = Date.now() + 30_000;
    while ((await rowsOf()) < 12 && Date.now() < goodBy) await sleep(300);

    // A mapping that takes both: reprocessing asked of node a covers b's partitions too.
    const fixed = [{ type: 'template', name: 'n', rawString: true, template: { language: 'jsonnet', content: 'Body("user.id", Body("account.id", ""))' } }];
    await a.task('PATCH', '/v1/branches/default/sources/mend/sinks/rows', { table: { mapping: { columns: fixed } } });
    // The update restarts the sink's writers: while a partition is between them the API answers
    // 503 sinkNotAvailable ("try again in a moment"), checked before any work, so a client retries.
    let reprocessed = await a.call('POST', '/v1/branches/default/sources/mend/sinks/rows/failures/reprocess', undefined, 60_000);
    for (const retryBy = Date.now() + 20_000; reprocessed.status === 503 && Date.now() < retryBy;) {
      expect(reprocessed.json.error).toBe('stream.api.sinkNotAvailable');
      await sleep(500);
      reprocessed = await a.call('POST', '/v1/branches/default/sources/mend/sinks/rows/failures/reprocess', undefined, 60_000);
    }
    expect(reprocessed.status, reprocessed.text).toBe(200);
    expect(reprocessed.json).toEqual({ reprocessed: 12, failed: 0 });
    const keptOf = async (n: ChildService) => (await n.call('GET', '/v1/branches/default/sources/mend/sinks/rows/failures')).json.failures as unknown[];
    expect([await keptOf(a), await keptOf(b)]).toEqual([[], []]);

    // A replay asked of node b: every partition is scanned, nothing written twice.
    const replayed = await b.task('POST', '/v1/branches/default/sources/mend/sinks/rows/replay', { since }, 60_000);
    expect(replayed.outputs).toMatchObject({ written: 0, failed: 0, skipped: 24, total: 24, scanned: 24 });
    // fullRemap writes every record of every partition once more.
    const full = await b.task('POST', '/v1/branches/default/sources/mend/sinks/rows/replay', { since, fullRemap: true }, 60_000);
    expect(full.outputs).toMatchObject({ written: 24, skipped: 0 });

    const doneBy = Date.now() + 40_000;
    while ((await rowsOf()) < 48 && Date.now() < doneBy) await sleep(300);
    await sleep(1500);
    expect(await a.stop(), tail(a.output())).toEqual({ code: 0, signal: null });
    expect(await b.stop(), tail(b.output())).toEqual({ code: 0, signal: null });
    const rows = (await tableRows('mend')).sort();
    expect(rows).toEqual([...good, ...good, ...bad, ...bad].sort());
  }, 240_000);
});
