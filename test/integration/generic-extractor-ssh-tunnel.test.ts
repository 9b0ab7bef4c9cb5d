/**
 * The generic extractor's SSH tunnel (parameters.sshProxy) against a real SSH server (ssh2's, as
 * the conformance examples 131 and 133 use it): requests reach an API that only the SSH server
 * can reach, a wrong key or an unreachable server fails with a clear message, and a destination
 * the server refuses fails the request, not the process.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpClient, SshTunnel, UserError, parseSshProxy } from '@sluice/generic-extractor';
import { ed25519Key, startSshProxy, type SshProxyServer } from '../conformance/generic-extractor/ssh-proxy.js';
import { freePort } from '../helpers/child-service.js';

const key = ed25519Key;
const RETRY = { maxRetries: 0, codes: [], maxTimeSeconds: 5, retryHeader: 'Retry-After', curlCodes: [] };

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function privateApi(): Promise<number> {
  const api: Server = createServer((req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ path: req.url, host: req.headers.host })));
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => api.close(() => r())));
  return (api.address() as AddressInfo).port;
}

async function proxyFor(privateKey: string, apiPort: number): Promise<SshProxyServer> {
  // Behind the SSH server the name "private-api" is the API; nothing else is reachable.
  const proxy = await startSshProxy(privateKey, (host, port) => (host === 'private-api' && port === 80 ? { host: '127.0.0.1', port: apiPort } : undefined));
  cleanup.push(() => proxy.close());
  return proxy;
}

const at = (port: number) => () => ({ host: '127.0.0.1', port });

describe('generic extractor: SSH tunnel', () => {
  it('reaches an API that only the SSH server can reach, by the name the SSH server resolves', async () => {
    const privateKey = key();
    const proxy = await proxyFor(privateKey, await privateApi());
    const tunnel = await SshTunnel.open({ host: 'ssh-proxy', port: 22, user: 'root', privateKey }, at(proxy.port));
    const client = new HttpClient({ retry: RETRY, timeoutMs: 5000, ignoreErrors: [], debug: false, secrets: [], log: () => undefined, connectTo: tunnel.connectTo });
    try {
      const first = await client.download({ url: 'http://private-api/users?page=1', method: 'GET', headers: {} });
      const second = await client.download({ url: 'http://private-api/users?page=2', method: 'GET', headers: {} });
      expect(first.body).toEqual({ path: '/users?page=1', host: 'private-api' });
      expect(second.body).toEqual({ path: '/users?page=2', host: 'private-api' });
      expect(proxy.channels).toBeGreaterThanOrEqual(1);
    } finally {
      await client.close();
      await tunnel.close();
    }
  });

  it('fails with the server and the reason for a key the server does not take, and for a server that is not there', async () => {
    const proxy = await proxyFor(key(), await privateApi());
    const wrongKey = SshTunnel.open({ host: 'ssh-proxy', port: 22, user: 'root', privateKey: key() }, at(proxy.port));
    await expect(wrongKey).rejects.toBeInstanceOf(UserError);
    await expect(wrongKey).rejects.toThrow(/Cannot connect to the SSH proxy root@ssh-proxy:22: .*authentication/i);
    const nobody = await freePort();
    await expect(SshTunnel.open({ host: 'ssh-proxy', port: 22, user: 'root', privateKey: key() }, at(nobody))).rejects.toThrow(/Cannot connect to the SSH proxy root@ssh-proxy:22: .*ECONNREFUSED/);
  });

  it('fails a request to a destination the SSH server refuses, and goes on', async () => {
    const privateKey = key();
    const proxy = await proxyFor(privateKey, await privateApi());
    const tunnel = await SshTunnel.open({ host: 'ssh-proxy', port: 22, user: 'root', privateKey }, at(proxy.port));
    const client = new HttpClient({ retry: RETRY, timeoutMs: 5000, ignoreErrors: [], debug: false, secrets: [], log: () => undefined, connectTo: tunnel.connectTo });
    try {
      await expect(client.download({ url: 'http://elsewhere/users', method: 'GET', headers: {} })).rejects.toThrow();
      expect((await client.download({ url: 'http://private-api/ok', method: 'GET', headers: {} })).body).toMatchObject({ path: '/ok' });
    } finally {
      await client.close();
      await tunnel.close();
    }
  });

  it('checks parameters.sshProxy: host, user, port and a readable key', () => {
    const privateKey = key();
    expect(parseSshProxy({ host: 'h', user: 'u', '#privateKey': privateKey })).toEqual({ host: 'h', port: 22, user: 'u', privateKey });
    expect(() => parseSshProxy({ user: 'u', '#privateKey': privateKey })).toThrow(/sshProxy.host must be a non-empty string/);
    expect(() => parseSshProxy({ host: 'h', user: 'u', port: 70000, '#privateKey': privateKey })).toThrow(/sshProxy.port must be a port number/);
    expect(() => parseSshProxy({ host: 'h', user: 'u', '#privateKey': 'not a key' })).toThrow(/sshProxy.#privateKey cannot be read/);
  });
});
