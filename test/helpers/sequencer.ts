/**
 * vitest's order of test files (failed first, then the longest, then unknown and larger files
 * first), except that the files driving real clients built by a script of the project (the
 * OpenTelemetry Collector and telemetrygen; a Kafka Connect worker) come last: their tools may
 * still be building (a cold Go build takes minutes, a cold Maven download and javac up to one;
 * global-setup.ts starts them as the run begins), and a file waiting for them early would hold
 * one of the two workers idle.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { KAFKA_CONNECT_TEST_FILES } from './kafka-connect.js';
import { OTEL_TOOLS_TEST_FILES } from './otel-tools.js';

const BUILT_CLIENTS = [OTEL_TOOLS_TEST_FILES, KAFKA_CONNECT_TEST_FILES];

export class BuiltClientsLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (f: TestSpecification) => BUILT_CLIENTS.some((pattern) => pattern.test(f.moduleId));
    return [...sorted.filter((f) => !last(f)), ...sorted.filter(last)];
  }
}
