/**
 * vitest's order of test files (failed first, then the longest, then unknown and larger files
 * first), except that the files driving the OpenTelemetry Collector and telemetrygen come last:
 * their tools may still be building (a cold Go build takes minutes; global-setup.ts starts it as
 * the run begins), and a file waiting for them early would hold one of the two workers idle.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { OTEL_TOOLS_TEST_FILES } from './otel-tools.js';

export class OtelToolsLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (f: TestSpecification) => OTEL_TOOLS_TEST_FILES.test(f.moduleId);
    return [...sorted.filter((f) => !last(f)), ...sorted.filter(last)];
  }
}
