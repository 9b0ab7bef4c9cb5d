import { describe, expect, it } from 'vitest';
import { lineShape, RepeatedLines } from '../src/log-summary.js';
import { classifyTransportError, CURL } from '../src/http/http-client.js';

describe('generic extractor: repeated log lines', () => {
  it('logs the first lines of a kind, then one summary with the count and the last line', () => {
    const out: string[] = [];
    const lines = new RepeatedLines((m, level = 'info') => out.push(`${level}: ${m}`), 3);
    for (let i = 1; i <= 150; i++) lines.line('stop', `Job 'users/${i}/orders': Limit reached`, 'info', "child jobs of 'users/{id}/orders'");
    lines.line('other', 'once', 'warning');
    lines.flush();
    expect(out).toEqual([
      "info: Job 'users/1/orders': Limit reached",
      "info: Job 'users/2/orders': Limit reached",
      "info: Job 'users/3/orders': Limit reached",
      'warning: once',
      "info: … and 147 more like this (150 in all) for child jobs of 'users/{id}/orders'; the last: Job 'users/150/orders': Limit reached",
    ]);
    // Counting starts afresh after a flush.
    lines.line('stop', 'again');
    lines.flush();
    expect(out.at(-1)).toBe('info: again');
  });

  it('groups lines that differ only in numbers', () => {
    expect(lineShape('Limit reached, stopping scrolling. Current count: 5, limit: 5.5')).toBe('Limit reached, stopping scrolling. Current count: #, limit: #');
  });
});

describe('generic extractor: transport errors as the reference retries them (curl codes)', () => {
  it('maps Node and undici error codes to libcurl error numbers', () => {
    const err = (code: string, message = '') => Object.assign(new Error(message), { code });
    expect(classifyTransportError(err('ECONNREFUSED')).curl).toBe(CURL.COULDNT_CONNECT);
    expect(classifyTransportError(err('ENOTFOUND')).curl).toBe(CURL.COULDNT_RESOLVE_HOST);
    expect(classifyTransportError(err('UND_ERR_HEADERS_TIMEOUT')).curl).toBe(CURL.OPERATION_TIMEDOUT);
    expect(classifyTransportError(err('UND_ERR_SOCKET', 'other side closed')).curl).toBe(CURL.GOT_NOTHING);
    expect(classifyTransportError(err('ECONNRESET')).curl).toBe(CURL.RECV_ERROR);
    expect(classifyTransportError(err('DEPTH_ZERO_SELF_SIGNED_CERT')).curl).toBe(CURL.PEER_FAILED_VERIFICATION);
    expect(classifyTransportError(err('ERR_SSL_WRONG_VERSION_NUMBER')).curl).toBe(CURL.SSL_CONNECT_ERROR);
    expect(classifyTransportError(err('ERR_INVALID_URL')).curl).toBeNull();
  });
});
