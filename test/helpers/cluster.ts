/**
 * Two (or more) `sluice serve --kafka` child processes on one test broker, sharing a tables file
 * in a folder of their own, with short trigger intervals; and what the cluster tests read: the
 * tables file directly (after the nodes stopped), and the nodes' JSON log lines.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ChildService } from './child-service.js';
import { startTestBroker, type TestBroker } from './kafka-broker.js';

export interface TestCluster {
  broker: TestBroker;
  nodes: ChildService[];
  tablesFile: string;
  dispose(): Promise<void>;
}

/** The environment of a `sluice serve --kafka` child process on a test broker: one replica, short trigger intervals. */
export function kafkaNodeEnv(bootstrap: string): Record<string, string> {
  return {
    SLUICE_KAFKA_BROKERS: bootstrap, SLUICE_KAFKA_REPLICATION: '1',
    SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '300ms', SLUICE_IMPORT_MIN_INTERVAL: '500ms', SLUICE_RETRY_BASE: '1s',
  };
}

export async function startTestCluster(names: string[], env: Record<string, string> = {}): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
  const tablesFile = join(root, 'shared', 'tables.duckdb');
  mkdirSync(join(root, 'shared'));
  const broker = await startTestBroker();
  const nodes = names.map((name) => new ChildService({
    dataDir: join(root, name),
    env: { ...kafkaNodeEnv(broker.bootstrap), SLUICE_TARGET_PATH: tablesFile, ...env },
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
  return { broker, nodes, tablesFile, dispose };
}

/** One column of a table, read from a DuckDB file no process holds (read-only). */
export async function readColumn(file: string, bucketId: string, table: string, column: string): Promise<string[]> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  try {
    const conn = await instance.connect();
    try {
      const reader = await conn.runAndReadAll(`SELECT "${column}" AS v FROM "${bucketId}"."${table}"`);
      return (reader.getRowObjectsJS() as { v: string }[]).map((r) => r.v);
    } finally {
      conn.closeSync();
    }
  } finally {
    instance.closeSync();
  }
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
