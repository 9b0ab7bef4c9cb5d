/**
 * A local HTTP server that answers the client's batches as a test scripts it (200 with counts,
 * 429/503 with Retry-After, a dropped connection, an answer held back), and keeps every request
 * it saw: when, its headers, its body inflated.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface SeenRequest {
  at: number;
  url: string;
  headers: IncomingMessage['headers'];
  /** The body as sent (gzip bytes when gzipped). */
  raw: Buffer;
  /** The body inflated, as text. */
  text: string;
  /** The records in it: NDJSON lines, or a JSON array's elements re-serialised. */
  records: string[];
}

export type Reply =
  | { status: number; headers?: Record<string, string>; body?: string | object }
  /** Closes the connection without an answer. */
  | 'drop'
  /** Answers when the returned promise resolves. */
  | Promise<{ status: number; headers?: Record<string, string>; body?: string | object }>;

/** Answers a batch as Sluice does when it keeps every record. */
export function accepted(req: SeenRequest, status = 200): { status: number; body: object } {
  const n = req.records.length;
  return { status, body: { statusCode: status, message: `Successfully written ${n} of ${n} records.`, accepted: n, rejected: 0, errors: [] } };
}

export class ScriptedServer {
  readonly seen: SeenRequest[] = [];
  private server!: Server;
  url = '';

  constructor(private script: (req: SeenRequest, index: number) => Reply = (req) => accepted(req)) {}

  static async start(script?: (req: SeenRequest, index: number) => Reply): Promise<ScriptedServer> {
    const s = new ScriptedServer(script);
    s.server = createServer((req, res) => void s.handle(req, res));
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}/stream/1/orders/secret`;
    return s;
  }

  setScript(script: (req: SeenRequest, index: number) => Reply): void {
    this.script = script;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
    const records = req.headers['content-type'] === 'application/json' ? (JSON.parse(text) as unknown[]).map((r) => JSON.stringify(r)) : text.split('\n').filter((l) => l !== '');
    const seen: SeenRequest = { at: performance.now(), url: req.url ?? '', headers: req.headers, raw, text, records };
    this.seen.push(seen);
    const reply = this.script(seen, this.seen.length - 1);
    if (reply === 'drop') {
      req.socket.destroy();
      return;
    }
    const { status, headers, body } = await reply;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
  }
}

/** Waits until `condition` holds (polling every 5 ms); throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
