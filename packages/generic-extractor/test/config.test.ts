import { describe, expect, it } from 'vitest';
import { expandIterations, parseConfig } from '../src/config/config.js';
import { stateStructure, stateTime } from '../src/config/state.js';
import { UserError } from '../src/errors.js';

const base = (api: Record<string, unknown> = {}, config: Record<string, unknown> = {}) => ({
  parameters: { api: { baseUrl: 'http://api.example.com/v1/', ...api }, config: { jobs: [{ endpoint: 'users' }], ...config } },
});

function error(cfg: unknown): string {
  try {
    parseConfig(cfg);
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    return (err as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('generic extractor: configuration validation', () => {
  it('accepts a minimal configuration with defaults', () => {
    const c = parseConfig(base());
    expect(c.jobs[0]).toMatchObject({ endpoint: 'users', method: 'GET', params: {} });
    expect(c.retry.maxRetries).toBe(10);
    expect(c.incrementalOutput).toBe(false);
    expect(c.compatLevel).toBe(3);
    // compatLevel: an empty value (0) is the latest; 1 (the legacy JSON parser) is accepted.
    expect(parseConfig(base({}, { compatLevel: 0 })).compatLevel).toBe(3);
    expect(parseConfig(base({}, { compatLevel: 1 })).compatLevel).toBe(1);
    expect(error(base({}, { compatLevel: 'x' }))).toMatch(/compatLevel must be an integer/);
    expect(c.outputBucket).toBe('');
    expect(parseConfig(base({ name: 'shop' }, { id: 7 })).outputBucket).toBe('ex-api-shop-7');
    expect(parseConfig(base({}, { id: 7, outputBucket: 'b' })).outputBucket).toBe('b');
  });

  it('explains what is wrong', () => {
    expect(error({})).toMatch(/'parameters' must be an object/);
    expect(error(base({ baseUrl: 'ftp://x' }))).toMatch(/http/);
    expect(error(base({ baseUrl: 'not a url' }))).toMatch(/not a valid URL/);
    expect(error(base({}, { jobs: [] }))).toMatch(/config.jobs' must be a non-empty array/);
    expect(error(base({}, { jobs: [{ params: {} }] }))).toMatch(/jobs\[0\].endpoint must be a non-empty string/);
    expect(error(base({}, { jobs: [{ endpoint: 'x', method: 'PUT' }] }))).toMatch(/GET, POST or FORM/);
    expect(error(base({}, { jobs: [{ endpoint: 'x', children: [{ endpoint: 'y', placeholders: { id: 5 } }] }] }))).toMatch(/children\[0\].placeholders.id/);
    expect(error(base({ pagination: 'offset' }))).toMatch(/api.pagination must be an object/);
    expect(error(base({ http: { requiredHeaders: ['X-Key'] } }))).toMatch(/missing required header 'X-Key'/);
  });

  it('names the features that are not supported', () => {
    expect(error(base({ authentication: { type: 'oauth2' } }))).toMatch(/unknown api.authentication.type 'oauth2'/);
    expect(error({ parameters: { ...base().parameters, aws: {} } })).toMatch(/parameters.aws.signature.credentials must be an object/);
    expect(error(base({ authentication: { type: 'login' } }))).toMatch(/'loginRequest' is not configured/);
    expect(error(base({}, { mappings: 'x' }))).toMatch(/mappings must be an object/);
    expect(error({ parameters: { ...base().parameters, sshProxy: {} } })).toMatch(/parameters.sshProxy.host must be a non-empty string/);
    expect(error(base({ baseUrl: { function: 'nope', args: [] } }))).toMatch(/Illegal function 'nope'/);
  });

  it('reads the retry settings: the reference keys, and the bound on the time spent retrying', () => {
    const d = parseConfig(base()).retry;
    expect(d).toEqual({ maxRetries: 10, codes: [500, 502, 503, 504, 408, 420, 429], retryHeader: 'Retry-After', curlCodes: [28, 6, 7, 35, 52, 56], maxTimeSeconds: 30 });
    const c = parseConfig(base({ retryConfig: { maxRetries: 3, maxTime: 5, http: { codes: [503], retryHeader: 'X-Wait' }, curl: { codes: [7] } } })).retry;
    expect(c).toEqual({ maxRetries: 3, codes: [503], retryHeader: 'X-Wait', curlCodes: [7], maxTimeSeconds: 5 });
    expect(error(base({ retryConfig: { maxTime: -1 } }))).toMatch(/retryConfig.maxTime must be a non-negative number of seconds/);
    expect(error(base({ retryConfig: { curl: { codes: 'all' } } }))).toMatch(/retryConfig.curl.codes must be an array/);
  });

  it('accepts OAuth 1.0 and TLS certificates in PEM', () => {
    expect(parseConfig(base({ authentication: { type: 'oauth10' } })).auth).toEqual({ type: 'oauth10' });
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const key = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
    const c = parseConfig(base({ caCertificate: pem, '#clientCertificate': pem + key }));
    expect(c.caCertificate).toBe(pem);
    expect(c.clientCertificate).toBe(pem + key);
    expect(error(base({ caCertificate: 'abc' }))).toMatch(/api.caCertificate must be a PEM string/);
    expect(error(base({ '#clientCertificate': pem }))).toMatch(/followed by its private key/);
  });

  it('evaluates user functions in baseUrl and headers with the config attributes', () => {
    const c = parseConfig(
      base(
        { baseUrl: { function: 'concat', args: ['http://', { attr: 'server.host' }, '/v1/'] }, http: { headers: { 'X-Key': { attr: '#key' } } } },
        { server: { host: 'example.com' }, '#key': 'k1' },
      ),
    );
    expect(c.baseUrl).toBe('http://example.com/v1/');
    expect(c.headers).toEqual({ 'X-Key': 'k1' });
  });

  it('reads basic and query authentication', () => {
    expect(parseConfig(base({ authentication: { type: 'basic' } }, { '#username': 'u', '#password': 'p' })).auth).toEqual({ type: 'basic', username: 'u', password: 'p' });
    expect(error(base({ authentication: { type: 'basic' } }))).toMatch(/username/);
    expect(parseConfig(base({ authentication: { type: 'query', query: { token: 'abc' } } })).auth).toEqual({ type: 'query', query: { token: 'abc' } });
    expect(parseConfig(base({ authentication: { type: 'login', loginRequest: { endpoint: 'login' }, expires: 60 } })).auth).toMatchObject({ type: 'login', expires: 60 });
    expect(error(base({ authentication: { type: 'login', loginRequest: { endpoint: 'login' }, expires: 'soon' } }))).toMatch(/'expires'/);
  });

  it('expands iterations over parameters.config and reads the state', () => {
    const raw = { parameters: { ...base({}, { accountId: 1 }).parameters, iterations: [{ accountId: 2 }, { accountId: 3 }] } };
    const configs = expandIterations(raw).map((c) => parseConfig(c));
    expect(configs.map((c) => c.attributes.accountId)).toEqual([2, 3]);
    expect(() => expandIterations({ parameters: { iterations: [] } })).toThrow(/non-empty array/);
    expect(stateTime({ time: { previousStart: 5 } }, 9)).toEqual({ previousStart: 5, currentStart: 9 });
    expect(stateTime({}, 9)).toEqual({ previousStart: 0, currentStart: 9 });
    expect(stateStructure({ 'json_parser.structVersion': 2, 'json_parser.struct': {} })).toBeUndefined();
    expect(stateStructure({ 'json_parser.structVersion': 2, 'json_parser.struct': { users: { id: 'scalar' } } })).toEqual({
      version: 2,
      struct: { users: { id: 'scalar' } },
    });
    expect(stateStructure({ 'json_parser.structVersion': 3, 'json_parser.struct': { data: {} } })).toEqual({ version: 3, struct: { data: {} } });
    expect(stateStructure({ 'json_parser.structVersion': 1, 'json_parser.struct': { users: {} } })).toBeUndefined();
  });
});
