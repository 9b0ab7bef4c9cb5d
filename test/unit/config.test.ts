import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('sluice serve options', () => {
  it('render sinks on a worker thread unless told otherwise', () => {
    expect(loadConfig([], {}).renderThread).toBe(true);
    expect(loadConfig(['--render-thread', 'off'], {}).renderThread).toBe(false);
    expect(loadConfig([], { SLUICE_RENDER_THREAD: 'false' }).renderThread).toBe(false);
    expect(loadConfig(['--render-thread', 'on'], { SLUICE_RENDER_THREAD: 'off' }).renderThread).toBe(true);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow(ConfigError);
    expect(() => loadConfig(['--render-thread', 'maybe'], {})).toThrow('render thread must be on or off, got "maybe".');
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

  it('serve plain ingestion requests before fastify unless told otherwise', () => {
    expect(loadConfig([], {}).ingestFastPath).toBe(true);
    expect(loadConfig(['--ingest-fast-path', 'off'], {}).ingestFastPath).toBe(false);
    expect(loadConfig([], { SLUICE_INGEST_FAST_PATH: '0' }).ingestFastPath).toBe(false);
    expect(() => loadConfig([], { SLUICE_INGEST_FAST_PATH: 'sometimes' })).toThrow('ingest fast path must be on or off, got "sometimes".');
  });
});
