import { describe, expect, it } from 'vitest';
import { createAuthenticator, mergeLoginQuery, oauth1Header, requestContext } from '../src/auth/auth.js';
import { parseConfig } from '../src/config/config.js';
import type { HttpClient } from '../src/http/http-client.js';

describe('generic extractor: login authentication query merge', () => {
  it('puts login parameters after the request-only ones, in their configured order (example 081)', () => {
    const url = 'http://h/users?debug=1&orderBy=userName&secretKey=none&customerId=234';
    expect(mergeLoginQuery(url, { apiToken: '987654', secretKey: 'a1b2c3d435f6', customerId: 'abc' })).toBe(
      'http://h/users?debug=1&orderBy=userName&apiToken=987654&secretKey%5B0%5D=none&secretKey%5B1%5D=a1b2c3d435f6&customerId%5B0%5D=234&customerId%5B1%5D=abc',
    );
  });

  it('appends new parameters and keeps the URL as is otherwise', () => {
    expect(mergeLoginQuery('http://h/users', { token: 't 1' })).toBe('http://h/users?token=t+1');
    expect(mergeLoginQuery('http://h/users?a=1#frag', { b: 2, c: true })).toBe('http://h/users?a=1&b=2&c=1#frag');
    // The login order decides, not the request's.
    expect(mergeLoginQuery('http://h/u?b=1&a=2&z=0', { a: 'x', b: 'y' })).toBe('http://h/u?z=0&a%5B0%5D=2&a%5B1%5D=x&b%5B0%5D=1&b%5B1%5D=y');
  });
});

describe('generic extractor: OAuth with an injected clock and random source', () => {
  const client = { addSecrets: () => undefined } as unknown as HttpClient;
  const defaults = { baseUrl: 'http://api.example.com/', defaultParams: {}, headers: {} };
  const fixedRandom = (hex: string) => () => Buffer.from(hex, 'hex');

  it('signs OAuth 1.0 requests as RFC 5849 / OAuth Core 1.0 (appendix A.5) does', () => {
    const header = oauth1Header(
      { url: 'http://photos.example.net/photos?file=vacation.jpg&size=original', method: 'GET', headers: {} },
      { consumerKey: 'dpf43f3p2l4k3l03', consumerSecret: 'kd94hf93k423kf44', token: 'nnch734d00sl2jdk', tokenSecret: 'pfkkdhi9sl3r4s00' },
      1191242096,
      'kllo9940pd9333jh',
    );
    expect(header).toBe(
      'OAuth oauth_consumer_key="dpf43f3p2l4k3l03", oauth_nonce="kllo9940pd9333jh", oauth_signature="tR3%2BTy81lMeYAr%2FFid0kMTYa%2FWM%3D", ' +
        'oauth_signature_method="HMAC-SHA1", oauth_timestamp="1191242096", oauth_token="nnch734d00sl2jdk", oauth_version="1.0"',
    );
  });

  it('takes the OAuth 1.0 timestamp and nonce from the clock and the random source', async () => {
    const config = parseConfig({
      parameters: { api: { baseUrl: 'http://api.example.com/', authentication: { type: 'oauth10' } }, config: { jobs: [{ endpoint: 'users' }] } },
      authorization: { oauth_api: { credentials: { '#data': '{"oauth_token":"t","oauth_token_secret":"ts"}', appKey: 'k', '#appSecret': 's' } } },
    });
    const auth = createAuthenticator({ config, client, defaults, log: () => undefined, now: () => 1_500_000_000_999, random: fixedRandom('00'.repeat(20)) });
    const req = await auth.apply({ url: 'http://api.example.com/users', method: 'GET', headers: {} });
    expect(req.headers.Authorization).toMatch(/oauth_nonce="0{40}".*oauth_timestamp="1500000000"/);
  });

  it('builds oauth20 headers per request with timestamp, nonce and the request context', async () => {
    const config = parseConfig({
      parameters: {
        api: {
          baseUrl: 'http://api.example.com:8080/',
          authentication: {
            type: 'oauth20',
            format: 'json',
            headers: {
              Authorization: {
                function: 'concat',
                args: [{ authorization: 'data.access_token' }, ' ', { authorization: 'timestamp' }, ' ', { authorization: 'nonce' }, ' ', { request: 'resource' }, ' ', { request: 'port' }],
              },
            },
          },
        },
        config: { jobs: [{ endpoint: 'users' }] },
      },
      authorization: { oauth_api: { credentials: { '#data': '{"access_token":"tok"}', appKey: 'id', '#appSecret': 'secret' } } },
    });
    const auth = createAuthenticator({ config, client, defaults, log: () => undefined, now: () => 1_492_958_193_000, random: fixedRandom('605cce2a2f687253') });
    const req = await auth.apply({ url: 'http://api.example.com:8080/users?a=1', method: 'GET', headers: {} });
    expect(req.headers.Authorization).toBe('tok 1492958193 605cce2a2f687253 /users?a=1 8080');
  });

  it('describes a request as the reference request context does (default ports, resource)', () => {
    expect(requestContext({ url: 'https://h.example/a/b?x=1', method: 'POST', headers: {} })).toEqual({
      url: 'https://h.example/a/b?x=1',
      path: '/a/b',
      queryString: 'x=1',
      method: 'POST',
      hostname: 'h.example',
      port: 443,
      resource: '/a/b?x=1',
    });
  });
});
