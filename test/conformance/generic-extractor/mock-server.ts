/**
 * A clone of keboola/ex-generic-mock-server for the generic extractor's
 * examples: every `*.request` file under the examples directory (all examples at once) defines
 * a response. A request matches when `METHOD + " " + raw URI + "\r\n\r\n" + body`, trimmed, equals
 * the file's trimmed content and every header of the optional `.requestHeaders` file is present
 * (`*` matches any value). `.response` is the body, `.responseCode` the status (default 200),
 * `.responseHeaders` the headers (default `Content-type: application/json`). File names are
 * matched with their exact case. No match: 404; the same request defined twice: 500.
 *
 * `serveTls` adds an HTTPS front with an example's certificate (the reference's https proxies,
 * examples 141 and 142), answering from the same definitions; `onRequest` is called for every
 * request (the runner's virtual clock advances by it).
 */
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

interface Definition {
  name: string;
  key: string;
  requestHeaders: [string, string][];
  responseBody: Buffer;
  responseCode: number;
  responseHeaders: [string, string][];
}

async function readOptional(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

function headerLines(text: string | null): [string, string][] {
  if (text === null) return [];
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.includes(':'))
    .map((l) => {
      const at = l.indexOf(':');
      return [l.slice(0, at).trim(), l.slice(at + 1).trim()] as [string, string];
    });
}

async function* requestFiles(dir: string, depth = 0): AsyncGenerator<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* requestFiles(path, depth + 1);
    else if (depth >= 1 && e.name.endsWith('.request')) yield path;
  }
}

export async function loadDefinitions(examplesDir: string): Promise<Definition[]> {
  const defs: Definition[] = [];
  for await (const file of requestFiles(examplesDir)) {
    const base = file.slice(0, -'.request'.length);
    const body = await readFile(`${base}.response`).catch(() => Buffer.alloc(0));
    const code = await readOptional(`${base}.responseCode`);
    defs.push({
      name: file.slice(examplesDir.length + 1),
      key: (await readFile(file, 'utf8')).trim(),
      requestHeaders: headerLines(await readOptional(`${base}.requestHeaders`)),
      responseBody: body,
      responseCode: code === null ? 200 : Number(code.trim()) || 200,
      responseHeaders: headerLines(await readOptional(`${base}.responseHeaders`)),
    });
  }
  return defs;
}

function headersMatch(def: Definition, req: http.IncomingMessage): boolean {
  return def.requestHeaders.every(([name, value]) => {
    const actual = req.headers[name.toLowerCase()];
    if (actual === undefined) return false;
    return value === '*' || (Array.isArray(actual) ? actual.includes(value) : actual === value);
  });
}

function signature(def: Definition): string {
  return `${def.key}\u0000${def.requestHeaders.map(([n, v]) => `${n.toLowerCase()}:${v}`).sort().join('\n')}`;
}

export interface TlsFront {
  port: number;
  close(): Promise<void>;
}

export interface MockServer {
  url: string;
  port: number;
  /** Requests received, as `METHOD URI`, for diagnostics. */
  log: string[];
  /** Called for every request received, before it is answered. */
  onRequest: (() => void) | null;
  /** An HTTPS server answering from the same definitions (`ca`: client certificates required, signed by it). */
  serveTls(options: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer }): Promise<TlsFront>;
  close(): Promise<void>;
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

export async function startMockServer(examplesDir: string, host = '127.0.0.1'): Promise<MockServer> {
  const defs = await loadDefinitions(examplesDir);
  const counts = new Map<string, number>();
  for (const d of defs) counts.set(signature(d), (counts.get(signature(d)) ?? 0) + 1);
  const log: string[] = [];
  const mock = { onRequest: null as (() => void) | null };
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      mock.onRequest?.();
      const body = Buffer.concat(chunks).toString('utf8');
      const key = `${req.method} ${req.url}\r\n\r\n${body}`.trim();
      log.push(`${req.method} ${req.url}`);
      const matches = defs.filter((d) => d.key === key && headersMatch(d, req));
      // The most specific definition (most required headers) wins.
      matches.sort((a, b) => b.requestHeaders.length - a.requestHeaders.length);
      const def = matches[0];
      if (!def) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ message: `Unknown request ${key}` }));
        return;
      }
      if ((counts.get(signature(def)) ?? 0) > 1) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ message: `Request defined more than once: ${def.name}` }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [n, v] of def.responseHeaders.length > 0 ? def.responseHeaders : [['Content-type', 'application/json'] as [string, string]]) {
        headers[n] = v;
      }
      res.writeHead(def.responseCode, headers);
      res.end(def.responseBody);
    });
  };
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    log,
    get onRequest() {
      return mock.onRequest;
    },
    set onRequest(f) {
      mock.onRequest = f;
    },
    async serveTls({ cert, key, ca }) {
      const tls = https.createServer({ cert, key, ...(ca !== undefined ? { ca, requestCert: true, rejectUnauthorized: true } : {}) }, handler);
      await new Promise<void>((resolve) => tls.listen(0, host, resolve));
      return { port: (tls.address() as AddressInfo).port, close: () => closeServer(tls) };
    },
    close: () => closeServer(server),
  };
}
