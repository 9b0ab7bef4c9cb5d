import { describe, expect, it } from 'vitest';
import { defaultMaxConnections, FALLBACK_OPEN_FILES, openFilesLimit, parseOpenFilesLimit } from '../../../src/http/open-files.js';
import { checkIntervalOf, httpLimits, HttpServers } from '../../../src/http/http-server.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                1048576              files
Max locked memory         8388608              8388608              bytes
`;

describe('the default connection cap', () => {
  it('reads the soft open-files limit of /proc/self/limits', () => {
    expect(parseOpenFilesLimit(LIMITS)).toBe(20000);
    expect(parseOpenFilesLimit(LIMITS.replace('20000  ', 'unlimited'))).toBeUndefined();
    expect(parseOpenFilesLimit('Max cpu time unlimited unlimited seconds\n')).toBeUndefined();
    expect(parseOpenFilesLimit('')).toBeUndefined();
  });

  it('is three quarters of that limit, the rest left to the stores and jobs', () => {
    expect(defaultMaxConnections(1024)).toBe(768);
    expect(defaultMaxConnections(20000)).toBe(15000);
    expect(defaultMaxConnections(1)).toBe(1);
    // This process's, whatever the platform: a positive number.
    expect(openFilesLimit()).toBeGreaterThan(0);
    expect(defaultMaxConnections()).toBe(Math.floor((openFilesLimit() * 3) / 4));
    expect(FALLBACK_OPEN_FILES).toBe(1024);
  });
});

describe('how often the timeouts are checked', () => {
  it('a quarter of the shortest timeout, between 50 ms and 1 s', () => {
    expect(checkIntervalOf({ headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 30_000 })).toBe(1_000);
    expect(checkIntervalOf({ headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 2_000 })).toBe(500);
    expect(checkIntervalOf({ headersTimeoutMs: 100, bodyIdleTimeoutMs: 0 })).toBe(50);
    expect(checkIntervalOf({ headersTimeoutMs: 0, bodyIdleTimeoutMs: 0 })).toBe(30_000);
  });
});

describe('the limits of the configuration', () => {
  it('take the flags as given, size an unset cap from the open-files limit, and make servers with any of them off', () => {
    expect(httpLimits({ headersTimeoutMs: 1.5, bodyIdleTimeoutMs: 2_000, bodyMinRate: 0, maxConnections: 0 }))
      .toEqual({ headersTimeoutMs: 2, bodyIdleTimeoutMs: 2_000, bodyMinRate: 0, maxConnections: 0 });
    expect(httpLimits({ headersTimeoutMs: 0, bodyIdleTimeoutMs: 0, bodyMinRate: 500, maxConnections: undefined }).maxConnections).toBe(defaultMaxConnections());
    for (const limits of [httpLimits({ headersTimeoutMs: 0, bodyIdleTimeoutMs: 0, bodyMinRate: 0, maxConnections: 0 }), httpLimits({ headersTimeoutMs: 1.5, bodyIdleTimeoutMs: 1, bodyMinRate: 1, maxConnections: 1 })]) {
      const server = new HttpServers(limits).createServer(() => undefined);
      expect(server.headersTimeout).toBe(limits.headersTimeoutMs);
      expect(server.requestTimeout).toBe(0);
      expect(server.listenerCount('connection')).toBe(1);
    }
  });
});
