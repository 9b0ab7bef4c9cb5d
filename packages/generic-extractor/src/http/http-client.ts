/**
 * The extractor's HTTP client (undici): retries on the configured status codes (default 408,
 * 420, 429, 500, 502, 503, 504) and on the transport errors the reference retries (its curl
 * codes: host not resolved, connection refused, timeout, TLS handshake, empty reply, receive
 * error) with exponential backoff, honouring `Retry-After` (seconds or an HTTP date; the header
 * name is configurable). The backoff of one request stops at `retryConfig.maxTime` (default 30 s
 * since its first attempt), so an API that is down fails the run within about that time; a wait
 * the API asks for with its retry header is honoured regardless (each at most 60 s, at most
 * `maxRetries` times). Per-request timeout; `ignoreErrors` turns listed error statuses into data;
 * `debug` logs every request with secrets masked; custom CA certificates and a client
 * certificate for TLS; `connectTo` reaches a named host at another address. Decodes the body as
 * JSON; anything else is a UserError with a clear message.
 */
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector, request as undiciRequest } from 'undici';
import { UserError } from '../errors.js';
import type { Json } from '../php.js';
import type { PreparedRequest } from './request.js';
import type { RetryConfig } from '../config/config.js';

/**
 * Where a host is really reached (like curl's `--connect-to`): the conformance runner maps the
 * examples' `mock-server` host to its local mock. The request keeps its URL (Host header, TLS
 * server name and certificate check, signatures); only the connection goes elsewhere.
 */
export type ConnectTo = (
  host: string,
  port: number,
  protocol: 'http:' | 'https:',
) => { host: string; port: number } | undefined | Promise<{ host: string; port: number } | undefined>;

/** TLS settings of `api.caCertificate` and `api.#clientCertificate` (PEM). */
export interface TlsSettings {
  /** CA certificates trusted beside the system's. */
  ca?: string;
  /** The client certificate (chain) and its private key. */
  cert?: string;
  key?: string;
}

export type LogLevel = 'info' | 'warning' | 'error';

export interface HttpClientOptions {
  retry: RetryConfig;
  timeoutMs: number;
  ignoreErrors: number[];
  debug: boolean;
  /** Strings never to be written to logs (passwords, tokens, auth header values). */
  secrets: string[];
  log: (message: string, level?: LogLevel) => void;
  /**
   * Lines that repeat from request to request (retry warnings), with a kind: the runner
   * summarises them (first few shown, then one line with the count). Default: `log`.
   */
  logRepeated?: (kind: string, message: string, level: LogLevel) => void;
  signal?: AbortSignal;
  /** First backoff delay; doubles per retry (default 1000 ms). */
  backoffBaseMs?: number;
  /** Longest single wait, also caps Retry-After (default 60 s). */
  maxDelayMs?: number;
  connectTo?: ConnectTo;
  tls?: TlsSettings;
  /** The headers to send instead of the request's, computed at each attempt (AWS signing: aws-signature.ts). */
  sign?: (req: PreparedRequest) => Record<string, string>;
}

/** libcurl error numbers the reference's `retryConfig.curl.codes` speaks of. */
export const CURL = {
  COULDNT_RESOLVE_HOST: 6,
  COULDNT_CONNECT: 7,
  OPERATION_TIMEDOUT: 28,
  SSL_CONNECT_ERROR: 35,
  GOT_NOTHING: 52,
  RECV_ERROR: 56,
  PEER_FAILED_VERIFICATION: 60,
} as const;

const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

/** A transport error (no HTTP answer): its code, and the libcurl error number it corresponds to. */
export function classifyTransportError(err: unknown): { code: string; curl: number | null } {
  const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
  const code = String(e?.code ?? e?.cause?.code ?? '');
  const message = String(e?.message ?? '');
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return { code, curl: CURL.COULDNT_RESOLVE_HOST };
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
    case 'ENETDOWN':
    case 'EADDRNOTAVAIL':
      return { code, curl: CURL.COULDNT_CONNECT };
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return { code, curl: CURL.OPERATION_TIMEDOUT };
    case 'ECONNRESET':
    case 'ECONNABORTED':
    case 'EPIPE':
      return { code, curl: CURL.RECV_ERROR };
    case 'UND_ERR_SOCKET':
      return { code, curl: /other side closed/i.test(message) ? CURL.GOT_NOTHING : CURL.RECV_ERROR };
  }
  if (TLS_VERIFY_CODES.has(code)) return { code, curl: CURL.PEER_FAILED_VERIFICATION };
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO' || /\b(ssl|tls)\b/i.test(message)) {
    return { code, curl: CURL.SSL_CONNECT_ERROR };
  }
  return { code, curl: null };
}

/** What a transport error means for the user, and what to check. */
function transportHint(curl: number | null, url: string): string {
  let host = url;
  try {
    host = new URL(url).host;
  } catch {
    // keep the URL
  }
  switch (curl) {
    case CURL.COULDNT_RESOLVE_HOST:
      return `the host name of ${host} cannot be resolved; check api.baseUrl`;
    case CURL.COULDNT_CONNECT:
      return `nothing accepts connections at ${host}; is the API running, and are the host and port in api.baseUrl right?`;
    case CURL.OPERATION_TIMEDOUT:
      return `${host} did not answer in time (api.http.timeout)`;
    case CURL.PEER_FAILED_VERIFICATION:
      return `the TLS certificate of ${host} is not trusted; api.caCertificate can name the CA that signed it`;
    case CURL.SSL_CONNECT_ERROR:
      return `the TLS handshake with ${host} failed`;
    default:
      return '';
  }
}

export interface Downloaded {
  body: Json;
  /** Bytes whose UTF-8 text is the JSON of `body` (the body as received, when it is JSON). */
  raw: Buffer;
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

/** PEM blocks of one kind (`CERTIFICATE`, or any `... PRIVATE KEY`) in a bundle. */
function pemBlocks(pem: string, kind: 'cert' | 'key'): string {
  const re = kind === 'cert' ? /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g : /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g;
  return (pem.match(re) ?? []).join('\n');
}

/** TLS settings of a configuration's `api.caCertificate` and `api.#clientCertificate` (cert + key in one PEM). */
export function tlsSettings(caCertificate: string | undefined, clientCertificate: string | undefined): TlsSettings | undefined {
  if (caCertificate === undefined && clientCertificate === undefined) return undefined;
  const out: TlsSettings = {};
  if (caCertificate !== undefined) out.ca = caCertificate;
  if (clientCertificate !== undefined) {
    out.cert = pemBlocks(clientCertificate, 'cert');
    out.key = pemBlocks(clientCertificate, 'key');
  }
  return out;
}

export class HttpClient {
  private readonly agent: Agent;

  constructor(private readonly opts: HttpClientOptions) {
    const { tls, connectTo } = opts;
    const base = buildConnector({
      ...(tls?.ca !== undefined ? { ca: [...rootCertificates, tls.ca] } : {}),
      ...(tls?.cert ? { cert: tls.cert } : {}),
      ...(tls?.key ? { key: tls.key } : {}),
    });
    const connect: buildConnector.connector = connectTo
      ? (o, callback) => {
          const protocol = o.protocol === 'https:' ? 'https:' : 'http:';
          Promise.resolve(connectTo(o.hostname, Number(o.port) || (protocol === 'https:' ? 443 : 80), protocol)).then(
            // The TLS server name (and certificate check) stays the URL's host.
            (to) => base(to ? { ...o, hostname: to.host, port: String(to.port), servername: o.servername ?? o.hostname } : o, callback),
            (err: Error) => callback(err, null),
          );
        }
      : base;
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 16, connect });
  }

  private warnRepeated(kind: string, message: string): void {
    if (this.opts.logRepeated) this.opts.logRepeated(kind, message, 'warning');
    else this.opts.log(message, 'warning');
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
        return { body: JSON.parse(res.text) as Json, raw: res.raw, bytes: res.bytes, status: res.status };
      } catch {
        const body = { errorData: res.text };
        return { body, raw: Buffer.from(JSON.stringify(body)), bytes: res.bytes, status: res.status };
      }
    }
    const body = decodeJson(res.text, res.contentType, `${req.method} ${maskSecrets(req.url, this.opts.secrets)}`);
    return { body, raw: res.raw, bytes: res.bytes, status: res.status };
  }

  /**
   * Sends the request (with retries); the body as text (and `raw`, its bytes). Error statuses
   * not ignored throw.
   */
  async send(req: PreparedRequest): Promise<{ status: number; text: string; raw: Buffer; bytes: number; contentType?: string }> {
    const { retry } = this.opts;
    const base = this.opts.backoffBaseMs ?? 1000;
    const maxDelay = this.opts.maxDelayMs ?? 60_000;
    const maxTimeMs = retry.maxTimeSeconds * 1000;
    const safeUrl = maskSecrets(req.url, this.opts.secrets);
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    const spent = (attempt: number) => `after ${attempt} ${attempt === 1 ? 'retry' : 'retries'} in ${(elapsed() / 1000).toFixed(1)} s`;
    /** The backoff wait before retry `attempt + 1`, clipped to the time left; null when none is left. */
    const backoff = (attempt: number): number | null => {
      const left = maxTimeMs - elapsed();
      if (left <= 0) return null;
      return Math.max(0, Math.min(maxDelay, base * 2 ** attempt, Math.ceil(left)));
    };
    for (let attempt = 0; ; attempt++) {
      if (this.opts.signal?.aborted) throw new UserError('Extraction aborted');
      const sent = this.opts.sign ? { ...req, headers: this.opts.sign(req) } : req;
      this.logRequest(sent, attempt);
      let status: number;
      let text: string;
      let raw: Buffer;
      let headers: Record<string, string | string[] | undefined>;
      try {
        const res = await undiciRequest(req.url, {
          method: req.method,
          headers: sent.headers,
          body: req.body,
          dispatcher: this.agent,
          headersTimeout: this.opts.timeoutMs,
          bodyTimeout: this.opts.timeoutMs,
          signal: this.opts.signal,
        });
        status = res.statusCode;
        headers = res.headers;
        ({ text, raw } = decodeBody(await res.body.bytes()));
      } catch (err) {
        if (this.opts.signal?.aborted) throw new UserError('Extraction aborted');
        const reason = (err as Error).message;
        const { curl } = classifyTransportError(err);
        const hint = transportHint(curl, req.url);
        const failed = (why: string) =>
          new UserError(`The API request failed: ${req.method} ${safeUrl}: ${reason}${hint ? ` (${hint})` : ''}${why ? `; ${why}` : ''}`);
        if (curl === null || !retry.curlCodes.includes(curl)) throw failed(attempt > 0 ? spent(attempt) : '');
        if (attempt >= retry.maxRetries) throw failed(`${spent(attempt)} (api.retryConfig.maxRetries: ${retry.maxRetries})`);
        const delay = backoff(attempt);
        if (delay === null) throw failed(`gave up ${spent(attempt)} (api.retryConfig.maxTime: ${retry.maxTimeSeconds} s)`);
        this.warnRepeated(`transport:${curl}`, `Request ${req.method} ${safeUrl} failed (${reason}); retrying in ${delay} ms`);
        await sleep(delay, this.opts.signal);
        continue;
      }
      let gaveUp = '';
      if (retry.codes.includes(status)) {
        if (attempt < retry.maxRetries) {
          const header = headers[retry.retryHeader.toLowerCase()];
          const fromHeader = retryAfterMs(Array.isArray(header) ? header[0] : header);
          // A wait the API asks for is honoured; the backoff of our own choosing is bounded.
          const delay = fromHeader !== null ? Math.min(maxDelay, fromHeader) : backoff(attempt);
          if (delay !== null) {
            this.warnRepeated(`status:${status}`, `API answered ${status} to ${req.method} ${safeUrl}; retrying in ${delay} ms`);
            await sleep(delay, this.opts.signal);
            continue;
          }
          gaveUp = ` (gave up ${spent(attempt)}: api.retryConfig.maxTime is ${retry.maxTimeSeconds} s)`;
        } else if (attempt > 0) {
          gaveUp = ` (${spent(attempt)}: api.retryConfig.maxRetries is ${retry.maxRetries})`;
        }
      }
      const bytes = Buffer.byteLength(text, 'utf8');
      if (status >= 400 && !this.opts.ignoreErrors.includes(status)) {
        throw new UserError(maskSecrets(`The API request failed: [${status}] ${req.method} ${safeUrl}: ${snippet(text)}${gaveUp}`, this.opts.secrets));
      }
      const ct = headers['content-type'];
      return { status, text, raw, bytes, contentType: Array.isArray(ct) ? ct[0] : ct };
    }
  }

  /** Adds strings to mask in logs (e.g. a token obtained by logging in). */
  addSecrets(secrets: string[]): void {
    this.opts.secrets.push(...secrets.filter((s) => s.length > 0));
  }
}

/** The body's text as undici's `body.text()` gives it (a UTF-8 BOM skipped), and its bytes without the BOM. */
function decodeBody(bytes: Uint8Array): { text: string; raw: Buffer } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const start = buf.length > 2 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  const raw = buf.subarray(start);
  return { text: raw.toString('utf8'), raw };
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
