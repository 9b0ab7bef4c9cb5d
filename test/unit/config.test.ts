import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, templateLimits } from '../../src/config.js';

describe('sluice serve options', () => {
  it('render sinks on a worker thread unless told otherwise', () => {
    expect(loadConfig([], {}).renderThread).toBe(true);
    expect(loadConfig(['--render-thread', 'off'], {}).renderThread).toBe(false);
    expect(loadConfig([], { SLUICE_RENDER_THREAD: 'false' }).renderThread).toBe(false);
    expect(loadConfig(['--render-thread', 'on'], { SLUICE_RENDER_THREAD: 'off' }).renderThread).toBe(true);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow(ConfigError);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow('render thread must be on or off, got "maybe".');
  });

  it('serve plain ingestion requests before fastify unless told otherwise', () => {
    expect(loadConfig([], {}).ingestFastPath).toBe(true);
    expect(loadConfig(['--ingest-fast-path', 'off'], {}).ingestFastPath).toBe(false);
    expect(loadConfig([], { SLUICE_INGEST_FAST_PATH: '0' }).ingestFastPath).toBe(false);
    expect(() => loadConfig([], { SLUICE_INGEST_FAST_PATH: 'sometimes' })).toThrow('ingest fast path must be on or off, got "sometimes".');
  });

  it('bounds template evaluations by default, each limit raised or lowered by a flag or its variable', () => {
    const defaults = loadConfig([], {});
    expect(templateLimits(defaults)).toEqual({
      timeoutMs: 100,
      maxArrayLength: 10_000_000,
      maxStringLength: 100_000_000,
      maxAllocationBytes: 256 * 1024 * 1024,
      limitNames: {
        timeoutMs: '--template-timeout',
        maxArrayLength: '--template-max-array-length',
        maxStringLength: '--template-max-string-length',
        maxAllocationBytes: '--template-max-allocation',
      },
    });
    const set = loadConfig(['--template-timeout', '2s', '--template-max-array-length', '20000000', '--template-max-allocation', '1GB'], { SLUICE_TEMPLATE_MAX_STRING_LENGTH: '5000' });
    expect(templateLimits(set)).toMatchObject({ timeoutMs: 2000, maxArrayLength: 20_000_000, maxStringLength: 5000, maxAllocationBytes: 1024 ** 3 });
  });

  it('refuses template limits that would not protect anything', () => {
    expect(() => loadConfig(['--template-timeout', '0'], {})).toThrow('template timeout must be longer than 0, got "0".');
    expect(() => loadConfig(['--template-max-array-length', '0'], {})).toThrow('template max array length must be at least 1, got "0".');
    // Past V8's own ceilings the process would abort (arrays) or throw its own error (strings).
    expect(() => loadConfig(['--template-max-array-length', '200000000'], {})).toThrow(
      "template max array length must be at most 134217725 (V8's own array limit), got \"200000000\".",
    );
    expect(() => loadConfig([], { SLUICE_TEMPLATE_MAX_STRING_LENGTH: '1000000000' })).toThrow('template max string length must be at most 536870888');
    expect(() => loadConfig(['--template-max-allocation', 'lots'], {})).toThrow('template max allocation must be a size like 1MB or 512KB, got "lots".');
  });
});
