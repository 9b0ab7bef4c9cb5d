/**
 * A real Kafka broker for a test file, started by the same code as `sluice kafka start` in a
 * folder of its own and stopped (folder removed) afterwards. The first run on a machine
 * downloads Kafka with Maven (cached in ~/.cache/sluice, or SLUICE_KAFKA_CACHE): hooks that
 * call this need a long timeout (KAFKA_START_TIMEOUT_MS).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBroker, stopBroker, type BrokerState } from '../../src/tools/kafka-broker/broker-process.js';
import { forgetProcess, noteProcess } from './leftovers.js';

/** Download (first run) plus start. */
export const KAFKA_START_TIMEOUT_MS = 240_000;

export interface TestBroker extends BrokerState {
  dir: string;
  stop(): Promise<void>;
}

export async function startTestBroker(): Promise<TestBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-kafka-'));
  const started = Date.now();
  const state = await startBroker({ dir, heap: '384m', log: (line) => process.stderr.write(`[kafka] ${line}\n`) });
  process.stderr.write(`[kafka] broker ${state.bootstrap} ready after ${Date.now() - started} ms\n`);
  noteProcess(state.pid);
  return {
    ...state,
    dir,
    async stop() {
      await stopBroker(dir);
      forgetProcess(state.pid);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
