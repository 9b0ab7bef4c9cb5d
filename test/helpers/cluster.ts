/**
 * Two (or more) `sluice serve --kafka` child processes on one test broker, with short trigger
 * intervals, importing into one target: a tables file in a folder of their own (DuckDB, the
 * one-host cluster) or a PostgreSQL database (nodes that share no disk at all); and what the
 * cluster tests read: the target directly, and the nodes' JSON log lines.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChildService } from './child-service.js';
import { startTestBroker, type TestBroker } from './kafka-broker.js';
import { readRows, type TargetKind, type TargetLocation, type TargetServers } from './targets.js';

export interface TestCluster {
  broker: TestBroker;
  nodes: ChildService[];
  /** The tables: the shared DuckDB file, or the PostgreSQL database. */
  target: TargetLocation;
  dispose(): Promise<void>;
}



/** The environment of a `sluice serve --kafka` child process on a test broker: one replica, short trigger intervals. */
export function kafkaNodeEnv(bootstrap: string): Record<string, string> {
  return {
    SLUICE_KAFKA_BROKERS: bootstrap, SLUICE_KAFKA_REPLICATION: '1',
    SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '300ms', SLUICE_IMPORT_MIN_INTERVAL: '500ms', SLUICE_RETRY_BASE: '1s',
  };
}

/**
 * `target`: a DuckDB file in a folder every node reaches (default), or a new database of the
 * file's PostgreSQL server (`servers`). The nodes' data directories are their own either way.
 */
export async function startTestCluster(names: string[], env: Record<string, string> = {}, target: TargetKind = 'duckdb', servers?: TargetServers): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
  let where: TargetLocation & { env: Record<string, string> };
  if (target === 'postgres') {
    if (!servers) throw new Error('a cluster on PostgreSQL needs the test file\'s target servers');
    where = await servers.location('postgres');
  } else {
    mkdirSync(join(root, 'shared'));
    const path = join(root, 'shared', 'tables.duckdb');
    where = { path, env: { SLUICE_TARGET_PATH: path } };
  }
  const broker = await startTestBroker();
  const nodes = names.map((name) => new ChildService({
    dataDir: join(root, name),
    env: { ...kafkaNodeEnv(broker.bootstrap), ...where.env, ...env },
  }));
  const dispose = async () => {
    for (const n of nodes) await n.dispose();
    await broker.stop();
    rmSync(root, { recursive: true, force: true });
  };
  // A node that fails to start must not leave the others and the broker running (the caller gets no cluster to dispose).
  const started = await Promise.allSettled(nodes.map((n) => n.start(30_000)));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await dispose();
    throw failed.reason;
  }
  return { broker, nodes, target: { path: where.path, url: where.url }, dispose };
}

/** One column of a table, read from the target (a DuckDB file: no process may hold it). */
export async function readColumn(where: TargetLocation, bucketId: string, table: string, column: string): Promise<string[]> {
  return (await readRows(where, bucketId, table, [column])).map((r) => r[column]);
}

/** The node's JSON log lines with this message (pino `msg`), parsed. */
export function logLines<T = Record<string, unknown>>(node: ChildService, msg: string): T[] {
  return node.output().split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l) as T);
}

/** Rows a node's log says it imported into the table (empty files, e.g. at a hand-over, do not count). */
export function importedRows(node: ChildService, tableId: string): number {
  return logLines<{ tableId: string; rows: number }>(node, 'file imported').filter((l) => l.tableId === tableId).reduce((n, l) => n + l.rows, 0);
}

/** The partitions of a Kafka topic a node processes now, by its log. */
export function partitionsOf(node: ChildService, kafkaTopic: string): number[] {
  const state = new Map<number, boolean>();
  for (const line of node.output().split('\n')) {
    if (!line.includes(`"topic":"${kafkaTopic}"`) || !line.includes('processes the topic')) continue;
    const { partition, msg } = JSON.parse(line) as { partition: number; msg: string };
    state.set(partition, msg.includes('now processes'));
  }
  return [...state].filter(([, owned]) => owned).map(([p]) => p).sort();
}
