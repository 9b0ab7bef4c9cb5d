/**
 * GET /metrics on a port of its own (--metrics-port): a bare HTTP listener, so that scrapes
 * can come through a port clients never see. The same answer as on the API listener.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scrapeAnswer } from './scrape.js';
import type { Metrics } from './metrics.js';

/** `serve` makes the HTTP server (the node's, with its timeouts and connection cap: http/http-server.ts). */
export async function startMetricsListener(
  metrics: Metrics,
  host: string,
  port: number,
  token: string | undefined,
  serve: (listener: RequestListener) => Server = createServer,
): Promise<{ address: string; close(): Promise<void> }> {
  const server = serve((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: this port serves GET /metrics only.\n');
      return;
    }
    scrapeAnswer(metrics, token, req.headers.authorization).then(
      (answer) => {
        const headers: Record<string, string> = { 'content-type': answer.type };
        if (answer.status === 401) headers['www-authenticate'] = 'Bearer';
        res.writeHead(answer.status, headers).end(answer.body);
      },
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`Metrics failed: ${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { address, port: bound } = server.address() as AddressInfo;
  return {
    address: `http://${address.includes(':') ? `[${address}]` : address}:${bound}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
