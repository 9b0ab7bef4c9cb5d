/**
 * Crash safety with the Kafka event log: `node dist/main.js serve` with SLUICE_KAFKA_BROKERS
 * (built by `npm run build`) is killed with SIGKILL twice while clients stream events; every
 * event answered 200 (acks from all in-sync replicas) lands in the table, none twice unless its
 * request was retried, and the restarted process reads on after a short wait (its consumer's
 * join waits for the killed member at most the 3 s rebalance timeout).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService, tail } from '../helpers/child-service.js';
import { streamWhileKilling } from '../helpers/stream-while-killing.js';
import { expectEveryAckedOnce, waitAllImported } from '../helpers/exactly-once.js';
import { kafkaNodeEnv, readColumn } from '../helpers/cluster.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';
import { IMPORT_COUNT, N_COLUMNS, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';

let broker: TestBroker;
let svc: ChildService | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-kafka-crash-'));

beforeAll(async () => {
  broker = await startTestBroker();
}, KAFKA_START_TIMEOUT_MS);

afterAll(async () => {
  await svc?.dispose();
  await broker?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

const tableIds = () => readColumn({ path: join(dataDir, 'tables.duckdb') }, 'in.c-kcrash', 'rows', 'n');

describe('crash safety with Kafka', () => {
  it('keeps every acknowledged event exactly once across SIGKILLs while streaming', async () => {
    svc = new ChildService({
      dataDir,
      env: kafkaNodeEnv(broker.bootstrap),
    });
    const service = svc;
    await service.start();
    const path = await service.createSource('kcrash');
    await service.createSink('kcrash', 'rows', 'in.c-kcrash.rows', N_COLUMNS, { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 50 });

    const TOTAL = 1200;
    const run = Math.random().toString(36).slice(2, 8);
    const ids = Array.from({ length: TOTAL }, (_, i) => `${run}-${String(i).padStart(4, '0')}`);
    const killAt = [300 + Math.floor(Math.random() * 100), 800 + Math.floor(Math.random() * 100)];
    const { acked, attempts, retried, unexpected, kills } = await streamWhileKilling({
      service, path, ids, killAt, concurrency: 8, deadlineMs: 90_000,
      killAndRestart: async () => {
        await service.kill('SIGKILL');
        await service.start(30_000);
        return {};
      },
    });
    expect(unexpected, tail(service.output())).toEqual([]);
    expect(kills).toHaveLength(2);
    expect(acked.size).toBe(TOTAL);

    // Land the rest: a settings change rotates the file; then every file is imported at once.
    await service.patchSinkSettings('kcrash', 'rows', { [IMPORT_COUNT]: 1 });
    const landed = await waitAllImported(service, 'kcrash', 'rows', TOTAL, 30_000);
    expect(await service.stop(), tail(service.output())).toEqual({ code: 0, signal: null });

    const rows = await tableIds();
    const counts = expectEveryAckedOnce(rows, { ids, acked, attempts }, `kills ${JSON.stringify(kills)}; ${landed.stats}`);
    console.log(`kafka crash: ${TOTAL} events, kills ${JSON.stringify(kills)}, retried ${retried.size}, duplicates ${rows.length - counts.size}`);
  }, 180_000);
});
