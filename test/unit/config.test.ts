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

  it('serve plain ingestion requests before fastify unless told otherwise', () => {
    expect(loadConfig([], {}).ingestFastPath).toBe(true);
    expect(loadConfig(['--ingest-fast-path', 'off'], {}).ingestFastPath).toBe(false);
    expect(loadConfig([], { SLUICE_INGEST_FAST_PATH: '0' }).ingestFastPath).toBe(false);
    expect(() => loadConfig([], { SLUICE_INGEST_FAST_PATH: 'sometimes' })).toThrow('ingest fast path must be on or off, got "sometimes".');
  });
});
