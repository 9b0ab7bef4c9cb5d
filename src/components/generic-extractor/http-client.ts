/**
 * The extractor's HTTP client (undici): retries on the configured status codes (default 408,
 * 420, 429, 500, 502, 503, 504) and on transport errors with exponential backoff, honouring
 * `Retry-After` (seconds or an HTTP date; the header name is configurable); per-request timeout;
 * `ignoreErrors` turns listed error statuses into data; `debug` logs every request with secrets
 * masked. Decodes the body as JSON; anything else is a UserError with a clear message.
 */
import { Agent, request as undiciRequest } from 'undici';
import { UserError } from '../contract.js';
import type { Json } from './php.js';
import type { PreparedRequest } from './request.js';
import type { RetryConfig } from './config.js';

export interface HttpClientOptions {
  retry: RetryConfig;
  timeoutMs: number;
  ignoreErrors: number[];
  debug: boolean;
  /** Strings never to be written to logs (passwords, tokens, auth header values). */
  secrets: string[];
  log: (message: string, level?: 'info' | 'warning' | 'error') => void;
  signal?: AbortSignal;
  /** First backoff delay; doubles per retry (default 1000 ms). */
  backoffBaseMs?: number;
  /** Longest single wait, also caps Retry-After (default 60 s). */
  maxDelayMs?: number;
}

export interface Downloaded {
  body: Json;
  /** Bytes of the response body as received. */
  bytes: number;
  status: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new UserError('Extraction aborted'));
    const onAbort = () => {
      clearTimeout(t);
      reject(new UserError('Extraction aborted'));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Parses a Retry-After value: delay in seconds or an HTTP date. Null when absent or invalid. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined || value.trim() === '') return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export function maskSecrets(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) {
    if (s.length < 3) continue;
    out = out.split(s).join('*****');
    const encoded = encodeURIComponent(s);
    if (encoded !== s) out = out.split(encoded).join('*****');
  }
  return out;
}

const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|x-.*(token|key|secret|auth|password).*)$/i;

/**
 * Masks values of parameters whose names look secret (password, secret, token, api key) in a
 * URL query, a form body or a JSON body, for debug logs.
 */
export function maskSensitiveParams(text: string): string {
  const name = '[\\w.-]*(?:pass|secret|token|api[_-]?key|signature)[\\w.-]*';
  return text
    .replace(new RegExp(`((?:^|[?&\\s])${name}=)[^&\\s]*`, 'gi'), '$1*****')
    .replace(new RegExp(`("${name}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'gi'), '$1"*****"');
}

export class HttpClient {
  private readonly agent: Agent;

  constructor(private readonly opts: HttpClientOptions) {
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private logRequest(req: PreparedRequest, attempt: number): void {
    if (!this.opts.debug) return;
    const headers = Object.entries(req.headers)
      .map(([k, v]) => `${k}: ${SECRET_HEADER.test(k) ? '*****' : v}`)
      .join(', ');
    const line = `${req.method} ${req.url}${attempt > 0 ? ` (retry ${attempt})` : ''}${headers ? ` [${headers}]` : ''}${req.body !== undefined ? ` body ${req.body}` : ''}`;
    this.opts.log(maskSensitiveParams(maskSecrets(line, this.opts.secrets)));
  }

  /** Sends the request (with retries) and decodes the JSON body. */
  async download(req: PreparedRequest): Promise<Downloaded> {
    const res = await this.send(req);
    if (res.status >= 400) {
      // Only ignored errors get here: their body is the data, or {errorData: <raw>}.
      try {
        return { body: JSON.parse(res.text) as Json, bytes: res.bytes, status: res.status };
      } catch {
        return { body: { errorData: res.text }, bytes: res.bytes, status: res.status };
      }
    }
    return { body: decodeJson(res.text, res.contentType, `${req.method} ${maskSecrets(req.url, this.opts.secrets)}`), bytes: res.bytes, status: res.status };
  }

  /** Sends the request (with retries); the body as text. Error statuses not ignored throw. */
  async send(req: PreparedRequest): Promise<{ status: number; text: string; bytes: number; contentType?: string }> {
    const { retry } = this.opts;
    const base = this.opts.backoffBaseMs ?? 1000;
    const maxDelay = this.opts.maxDelayMs ?? 60_000;
    const safeUrl = maskSecrets(req.url, this.opts.secrets);
    for (let attempt = 0; ; attempt++) {
      if (this.opts.signal?.aborted) throw new UserError('Extraction aborted');
      this.logRequest(req, attempt);
      let status: number;
      let text: string;
      let headers: Record<string, string | string[] | undefined>;
      try {
        const res = await undiciRequest(req.url, {
          method: req.method,
          headers: req.headers,
          body: req.body,
          dispatcher: this.agent,
          headersTimeout: this.opts.timeoutMs,
          bodyTimeout: this.opts.timeoutMs,
          signal: this.opts.signal,
        });
        status = res.statusCode;
        headers = res.headers;
        text = await res.body.text();
      } catch (err) {
        if (this.opts.signal?.aborted) throw new UserError('Extraction aborted');
        const reason = (err as Error).message;
        if (attempt >= retry.maxRetries) {
          throw new UserError(`The API request failed: ${req.method} ${safeUrl}: ${reason} (after ${attempt} retries)`);
        }
        const delay = Math.min(maxDelay, base * 2 ** attempt);
        this.opts.log(`Request ${req.method} ${safeUrl} failed (${reason}); retrying in ${delay} ms`, 'warning');
        await sleep(delay, this.opts.signal);
        continue;
      }
      if (retry.codes.includes(status) && attempt < retry.maxRetries) {
        const header = headers[retry.retryHeader.toLowerCase()];
        const fromHeader = retryAfterMs(Array.isArray(header) ? header[0] : header);
        const delay = Math.min(maxDelay, fromHeader ?? base * 2 ** attempt);
        this.opts.log(`API answered ${status} to ${req.method} ${safeUrl}; retrying in ${delay} ms`, 'warning');
        await sleep(delay, this.opts.signal);
        continue;
      }
      const bytes = Buffer.byteLength(text, 'utf8');
      if (status >= 400 && !this.opts.ignoreErrors.includes(status)) {
        throw new UserError(maskSecrets(`The API request failed: [${status}] ${req.method} ${safeUrl}: ${snippet(text)}`, this.opts.secrets));
      }
      const ct = headers['content-type'];
      return { status, text, bytes, contentType: Array.isArray(ct) ? ct[0] : ct };
    }
  }

  /** Adds strings to mask in logs (e.g. a token obtained by logging in). */
  addSecrets(secrets: string[]): void {
    this.opts.secrets.push(...secrets.filter((s) => s.length > 0));
  }
}

function snippet(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine;
}

/** Decodes a response body; a broken or non-JSON body is a UserError naming the request. */
export function decodeJson(text: string, contentType: string | string[] | undefined, what: string): Json {
  try {
    if (text.trim() === '') throw new SyntaxError('empty body');
    return JSON.parse(text) as Json;
  } catch (err) {
    const type = Array.isArray(contentType) ? contentType[0] : contentType;
    const notJson = type !== undefined && !/json/i.test(type) ? ` (Content-Type: ${type})` : '';
    throw new UserError(
      `Invalid JSON response from API${notJson} for ${what}: ${(err as Error).message}. Body starts with: ${snippet(text.slice(0, 300))}`,
    );
  }
}
