/**
 * The HTTP side of the commands that talk to a running server (`sluice tables export`,
 * `sluice sql`): which server (`--url`), which token (`--token`, else the master token that
 * `sluice serve` saved in its data directory), and the Storage API's error envelope turned into
 * one readable line. Uses Node's global fetch.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CliError } from './errors.js';

export const DEFAULT_URL = 'http://localhost:8000';
/** The file `sluice serve` writes the generated master token to, in its data directory. */
const MASTER_TOKEN_FILE = 'master-token';

/** The options every server command takes, as parseArgs declares them. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  'data-dir': { type: 'string' },
} as const;

export const CONNECTION_HELP = `Connection (flag, environment variable):
  --url <url>         SLUICE_URL        the server (default ${DEFAULT_URL})
  --token <token>     SLUICE_TOKEN      Storage API token (default: SLUICE_MASTER_TOKEN when
                                        set, as "sluice serve" reads it, else the master token
                                        in <data-dir>/master-token, which "sluice serve" writes)
  --data-dir <dir>    SLUICE_DATA_DIR   the server's data directory, for the default token
                                        (default ./data)
`;

export interface Connection {
  url: string;
  token: string;
}

/**
 * The server and token from the flags, then the environment, then the defaults. The token
 * default is read only when no token was given, so a missing data directory is no error then.
 */
export function resolveConnection(flags: { url?: string; token?: string; 'data-dir'?: string }, env: NodeJS.ProcessEnv): Connection {
  const url = (flags.url ?? env.SLUICE_URL ?? DEFAULT_URL).trim().replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--url "${url}" is not a URL; give one like ${DEFAULT_URL}`, 2);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`--url "${url}" is not an http(s) URL; give one like ${DEFAULT_URL}`, 2);
  }
  // The server's own variable next: who chose the master token for `sluice serve` (a cluster's
  // nodes share one) has it in the environment of the shell that talks to them too.
  const given = [flags.token, env.SLUICE_TOKEN, env.SLUICE_MASTER_TOKEN].find((t) => t !== undefined && t.trim() !== '');
  if (given !== undefined) return { url, token: given.trim() };
  const dataDir = resolve(flags['data-dir'] ?? env.SLUICE_DATA_DIR ?? './data');
  const file = join(dataDir, MASTER_TOKEN_FILE);
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch {
    throw new CliError(`no token: give --token or SLUICE_TOKEN (or SLUICE_MASTER_TOKEN), or --data-dir of the server (${file} was not found)`);
  }
  if (token === '') throw new CliError(`no token: ${file} is empty; give --token or SLUICE_TOKEN`);
  return { url, token };
}

/** The Storage API's error body: {"error": "<message>", "code": "...", "status": "error"}. */
interface StorageErrorBody {
  error?: unknown;
  code?: unknown;
  message?: unknown;
}

/** What fetch's "fetch failed" TypeError wraps: a system error, or several (one per address). */
function networkCode(err: unknown): string | undefined {
  const cause = (err as { cause?: { code?: unknown; errors?: { code?: unknown }[] } })?.cause;
  if (!cause) return undefined;
  if (typeof cause.code === 'string') return cause.code;
  const inner = cause.errors?.find((e) => typeof e?.code === 'string');
  return inner ? String(inner.code) : undefined;
}

export class StorageClient {
  constructor(private readonly connection: Connection) {}

  get url(): string {
    return this.connection.url;
  }

  /** A Storage API call with the token; resolves to the parsed JSON answer of a 2xx. */
  async json<T>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = { 'X-StorageApi-Token': this.connection.token, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await this.fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`the server at ${this.url} answered ${method} ${path} with something that is not JSON (HTTP ${res.status})`);
    }
  }

  /** A GET with the token whatever its status (readiness answers 503 with what is not ready; /metrics may ask for its own token). */
  async answer(path: string): Promise<{ status: number; text: string; headers: Headers }> {
    const res = await this.fetch(path, { method: 'GET', headers: { 'X-StorageApi-Token': this.connection.token } });
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  /**
   * A GET without the token (a signed download URL carries its own signature); the answer's
   * body is left unread for the caller to stream. Fails on a non-2xx answer.
   */
  async download(pathAndQuery: string, signal?: AbortSignal): Promise<Response> {
    const res = await this.fetch(pathAndQuery, { method: 'GET', signal });
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  /** fetch against the base URL, with "nothing listens there" told apart from other failures. */
  private async fetch(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(this.url + path, init);
    } catch (err) {
      if ((err as Error)?.name === 'AbortError') throw err;
      const code = networkCode(err);
      if (code === 'ECONNREFUSED') throw new CliError(`no server at ${this.url} (start one with "npx sluice serve")`);
      const reason = code ?? (err as { cause?: Error })?.cause?.message ?? (err as Error)?.message;
      throw new CliError(`cannot reach ${this.url} (${reason})`);
    }
  }
}

/** The line for a failed answer: the envelope's message and code, else the status and body start. */
async function errorOf(res: Response): Promise<CliError> {
  const text = await res.text().catch(() => '');
  let body: StorageErrorBody | undefined;
  try {
    body = JSON.parse(text) as StorageErrorBody;
  } catch {
    body = undefined;
  }
  // The Stream API's envelope: {statusCode, error: "stream.api.<code>", message}.
  if (body && typeof body.message === 'string' && typeof body.error === 'string') {
    return new CliError(`${body.message} (${body.error}, HTTP ${res.status})`);
  }
  if (body && typeof body.error === 'string') {
    const code = typeof body.code === 'string' ? `${body.code}, ` : '';
    return new CliError(`${body.error} (${code}HTTP ${res.status})`);
  }
  const excerpt = text.trim().replace(/\s+/g, ' ').slice(0, 200);
  return new CliError(`HTTP ${res.status} ${res.statusText}${excerpt ? `: ${excerpt}` : ''}`);
}
