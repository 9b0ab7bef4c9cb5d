/**
 * AWS Signature V4 of the generic extractor's requests (parameters.aws.signature): the signing
 * agrees with AWS's own test suite, covers the body, is made at each attempt, and never shows
 * the secret or the signature in the debug log.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAwsSignature, signedHeaders, type AwsSignature } from '../src/auth/aws-signature.js';
import { HttpClient } from '../src/http/http-client.js';
import { parseConfig } from '../src/config/config.js';
import { UserError } from '../src/errors.js';

// The credentials and request of the AWS Signature V4 test suite ("get-vanilla").
const SUITE: AwsSignature = { accessKeyId: 'AKIDEXAMPLE', secretKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', serviceName: 'service', regionName: 'us-east-1' };
const SUITE_TIME = new Date('2015-08-30T12:36:00Z');

const servers: Array<{ close(): void }> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe('AWS request signing', () => {
  it("gives the AWS test suite's signature for its vanilla GET", () => {
    const headers = signedHeaders({ url: 'https://example.amazonaws.com/', method: 'GET', headers: {} }, SUITE, SUITE_TIME);
    expect(headers['X-Amz-Date']).toBe('20150830T123600Z');
    expect(headers.Authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
  });

  it('signs the query, the headers and the body: a change to any of them changes the signature', () => {
    const req = { url: 'https://api.example.com/v1/users?page=2', method: 'POST' as const, headers: { 'Content-Type': 'application/json', 'X-Custom': 'a' }, body: '{"q":1}' };
    const signature = (r: typeof req) => signedHeaders(r, SUITE, SUITE_TIME).Authorization;
    const base = signature(req);
    expect(base).toMatch(/SignedHeaders=content-length;content-type;host;x-amz-date;x-custom,/);
    expect(signature({ ...req, url: 'https://api.example.com/v1/users?page=3' })).not.toBe(base);
    expect(signature({ ...req, headers: { ...req.headers, 'X-Custom': 'b' } })).not.toBe(base);
    expect(signature({ ...req, body: '{"q":2}' })).not.toBe(base);
  });

  it('reads parameters.aws.signature.credentials, with a clear error for what is missing', () => {
    const parameters = (credentials: unknown) => ({
      parameters: { api: { baseUrl: 'https://api.example.com/' }, config: { jobs: [{ endpoint: 'users' }] }, aws: { signature: { credentials } } },
    });
    const full = { accessKeyId: 'AK', '#secretKey': 'SK', serviceName: 'execute-api', regionName: 'eu-central-1' };
    expect(parseConfig(parameters(full)).aws).toEqual({ accessKeyId: 'AK', secretKey: 'SK', serviceName: 'execute-api', regionName: 'eu-central-1' });
    expect(parseConfig({ parameters: { api: { baseUrl: 'https://x/' }, config: { jobs: [{ endpoint: 'u' }] } } }).aws).toBeUndefined();
    expect(() => parseAwsSignature({ signature: { credentials: { ...full, '#secretKey': '' } } })).toThrow(UserError);
    expect(() => parseAwsSignature({ signature: { credentials: { ...full, '#secretKey': '' } } })).toThrow(/credentials.#secretKey must be a non-empty string/);
    expect(() => parseAwsSignature({ signature: {} })).toThrow(/must be an object with accessKeyId, #secretKey, serviceName and regionName/);
  });

  it('signs each attempt again (a retry may come after the signature expired), and the debug log shows no signature', async () => {
    const seen: Array<{ authorization?: string; date?: string }> = [];
    const server = createServer((req: IncomingMessage, res) => {
      seen.push({ authorization: req.headers.authorization, date: req.headers['x-amz-date'] as string | undefined });
      res.writeHead(seen.length === 1 ? 503 : 200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/users`;
    let clock = SUITE_TIME.getTime();
    const log: string[] = [];
    const client = new HttpClient({
      retry: { maxRetries: 2, codes: [503], maxTimeSeconds: 60, retryHeader: 'Retry-After', curlCodes: [] },
      timeoutMs: 5000, ignoreErrors: [], debug: true, secrets: [SUITE.secretKey], log: (line) => void log.push(line), backoffBaseMs: 1,
      sign: (req) => signedHeaders(req, SUITE, new Date((clock += 60_000))),
    });
    try {
      expect((await client.download({ url, method: 'GET', headers: {} })).body).toEqual({ ok: true });
    } finally {
      await client.close();
    }
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.date)).toEqual(['20150830T123700Z', '20150830T123800Z']);
    expect(seen[0].authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20150830\/us-east-1\/service\/aws4_request/);
    expect(seen[1].authorization).not.toBe(seen[0].authorization);
    const signatures = seen.map((s) => /Signature=(\w+)/.exec(s.authorization!)![1]);
    expect(log.join('\n')).toContain('Authorization: *****');
    for (const s of [...signatures, SUITE.secretKey]) expect(log.join('\n')).not.toContain(s);
  });
});
