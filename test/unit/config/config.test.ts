import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, templateLimits } from '../../../src/config.js';

describe('sluice serve options', () => {
  it('render sinks on a worker thread unless told otherwise', () => {
    expect(loadConfig([], {}).renderThread).toBe(true);
    expect(loadConfig(['--render-thread', 'off'], {}).renderThread).toBe(false);
    expect(loadConfig([], { SLUICE_RENDER_THREAD: 'false' }).renderThread).toBe(false);
    expect(loadConfig(['--render-thread', 'on'], { SLUICE_RENDER_THREAD: 'off' }).renderThread).toBe(true);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow(ConfigError);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow('render thread must be on or off, got "maybe".');
  });

  it('bound read-only SQL: memory, connections and the queue, each with a default', () => {
    const defaults = loadConfig([], {});
    expect([defaults.sqlMemoryLimitBytes, defaults.sqlConnections, defaults.sqlQueueSize]).toEqual([512 * 1024 * 1024, 2, 8]);
    const given = loadConfig(['--sql-memory-limit', '1GB', '--sql-connections=4'], { SLUICE_SQL_QUEUE_SIZE: '0', SLUICE_SQL_CONNECTIONS: '9' });
    expect([given.sqlMemoryLimitBytes, given.sqlConnections, given.sqlQueueSize]).toEqual([1024 ** 3, 4, 0]);
    expect(() => loadConfig(['--sql-connections', '0'], {})).toThrow('SQL connections must be at least 1, got "0".');
    expect(() => loadConfig(['--sql-memory-limit', 'lots'], {})).toThrow('SQL memory limit must be a size like 1MB or 512KB, got "lots".');
    expect(() => loadConfig([], { SLUICE_SQL_QUEUE_SIZE: '-1' })).toThrow('SQL queue size must be a non-negative integer, got "-1".');
  });

  it('bound each sink\'s mapping of a batch (250ms) and the heap of each render thread (1GB) unless told otherwise', () => {
    expect(loadConfig([], {}).renderBudgetMs).toBe(250);
    expect(loadConfig(['--render-budget', '2s'], {}).renderBudgetMs).toBe(2000);
    expect(loadConfig([], { SLUICE_RENDER_BUDGET: '0s' }).renderBudgetMs).toBe(0);
    expect(() => loadConfig(['--render-budget', 'soon'], {})).toThrow('render budget must be a duration like 30s, 5m or 168h, got "soon".');
    expect(loadConfig([], {}).renderHeapLimitBytes).toBe(1024 ** 3);
    expect(loadConfig([], { SLUICE_RENDER_HEAP_LIMIT: '256MB' }).renderHeapLimitBytes).toBe(256 * 1024 ** 2);
    expect(() => loadConfig(['--render-heap-limit', 'lots'], {})).toThrow('render heap limit must be a size like 1MB or 512KB, got "lots".');
  });

  it('hold a source back once its sinks are 200 000 records behind unless told otherwise (0: never)', () => {
    expect(loadConfig([], {}).maxSinkBacklog).toBe(200_000);
    expect(loadConfig(['--max-sink-backlog', '5000'], {}).maxSinkBacklog).toBe(5000);
    expect(loadConfig([], { SLUICE_MAX_SINK_BACKLOG: '0' }).maxSinkBacklog).toBe(0);
    expect(() => loadConfig(['--max-sink-backlog', 'many'], {})).toThrow('max sink backlog must be a non-negative integer, got "many".');
  });

  it('give sources no quota unless a node-wide default is set, within the range of the source settings', () => {
    const plain = loadConfig([], {});
    expect([plain.sourceMaxRecordsPerSecond, plain.sourceMaxBytesPerSecond]).toEqual([0, 0]);
    const set = loadConfig(['--source-max-records-per-second', '500'], { SLUICE_SOURCE_MAX_BYTES_PER_SECOND: '2MB' });
    expect([set.sourceMaxRecordsPerSecond, set.sourceMaxBytesPerSecond]).toEqual([500, 2 * 1024 ** 2]);
    expect(() => loadConfig(['--source-max-records-per-second', '-1'], {}))
      .toThrow('source max records per second must be a whole number from 0 to 10000000 (0: no quota), got "-1".');
    expect(() => loadConfig(['--source-max-records-per-second', '2.5'], {})).toThrow(/whole number from 0 to 10000000/);
    expect(() => loadConfig(['--source-max-records-per-second', '10000001'], {})).toThrow(/whole number from 0 to 10000000/);
    expect(() => loadConfig([], { SLUICE_SOURCE_MAX_BYTES_PER_SECOND: '11GB' }))
      .toThrow('source max bytes per second must be a size from 0 to 10GB like 512KB or 1MB (bytes a second; 0: no quota), got "11GB".');
  });

  it('serve plain ingestion requests before fastify unless told otherwise', () => {
    expect(loadConfig([], {}).ingestFastPath).toBe(true);
    expect(loadConfig(['--ingest-fast-path', 'off'], {}).ingestFastPath).toBe(false);
    expect(loadConfig([], { SLUICE_INGEST_FAST_PATH: '0' }).ingestFastPath).toBe(false);
    expect(() => loadConfig([], { SLUICE_INGEST_FAST_PATH: 'sometimes' })).toThrow('ingest fast path must be on or off, got "sometimes".');
  });

  it('bound the HTTP server: headers and body timeouts, a minimum body rate, a connection cap, a JSON nesting limit', () => {
    const defaults = loadConfig([], {});
    expect(defaults).toMatchObject({ headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 30_000, bodyMinRate: 500, maxJsonDepth: 100 });
    // Sized from the open-files limit when the server starts.
    expect(defaults.maxConnections).toBeUndefined();
    const set = loadConfig(['--headers-timeout', '5s', '--body-idle-timeout=0', '--body-min-rate', '1KB', '--max-connections', '200', '--max-json-depth', '16'], {});
    expect(set).toMatchObject({ headersTimeoutMs: 5_000, bodyIdleTimeoutMs: 0, bodyMinRate: 1024, maxConnections: 200, maxJsonDepth: 16 });
    expect(loadConfig([], { SLUICE_MAX_CONNECTIONS: '0', SLUICE_BODY_MIN_RATE: '0' })).toMatchObject({ maxConnections: 0, bodyMinRate: 0 });
    expect(() => loadConfig(['--headers-timeout', 'soon'], {})).toThrow('headers timeout must be a duration like 30s, 5m or 168h, got "soon".');
    expect(() => loadConfig(['--body-min-rate', 'fast'], {})).toThrow('body min rate must be a size like 500B or 1KB (bytes a second), got "fast".');
    expect(() => loadConfig(['--max-connections', '-1'], {})).toThrow('max connections must be a non-negative integer, got "-1".');
    expect(() => loadConfig(['--max-json-depth', '0'], {})).toThrow('max JSON depth must be at least 1, got "0".');
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
