/**
 * Authentication (reference: GE `Authentication/*`): `basic` (Authorization header), `query`
 * (parameters added to every request, user functions may read the request's own query),
 * `login` and `oauth20.login` (a login request first — again once it expires — whose response
 * fills headers and query parameters of the API requests), `oauth20` (headers/query built per
 * request from the OAuth credentials, the request, a timestamp and a nonce) and `oauth10`
 * (OAuth 1.0a, HMAC-SHA1 signature in the Authorization header, as guzzle's oauth-subscriber).
 * Applied to a prepared request just before it is sent. Time and nonces come from the injected
 * clock and random source (`AuthDeps.now`, `AuthDeps.random`).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { UserError } from '../errors.js';
import type { AuthConfig, ExtractorConfig } from '../config/config.js';
import { getDataFromPath, PathNotFound } from '../response/data-path.js';
import { buildValues, flattenContext, phpStrtotime, type FunctionContexts } from '../config/functions.js';
import type { HttpClient } from '../http/http-client.js';
import { csvCell, isNumeric, isObject, isScalar, phpEmpty, phpUrldecode, phpUrlencode, type Json, type JsonObject } from '../php.js';
import { prepareRequest, type PreparedRequest, type RequestDefaults } from '../http/request.js';

export interface Authenticator {
  apply(req: PreparedRequest): Promise<PreparedRequest>;
}

type QueryValue = string | string[];

/** The query of a URL as ordered key → value(s), values decoded. */
function parseUrlQuery(url: string): { base: string; query: Map<string, QueryValue>; hash: string } {
  const hashAt = url.indexOf('#');
  const hash = hashAt >= 0 ? url.slice(hashAt) : '';
  const noHash = hashAt >= 0 ? url.slice(0, hashAt) : url;
  const q = noHash.indexOf('?');
  const query = new Map<string, QueryValue>();
  if (q >= 0) {
    for (const part of noHash.slice(q + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      query.set(phpUrldecode(eq >= 0 ? part.slice(0, eq) : part), eq >= 0 ? phpUrldecode(part.slice(eq + 1)) : '');
    }
  }
  return { base: q >= 0 ? noHash.slice(0, q) : noHash, query, hash };
}

function serializeQuery(base: string, query: Map<string, QueryValue>, hash: string): string {
  const parts: string[] = [];
  for (const [k, v] of query) {
    if (Array.isArray(v)) v.forEach((x, i) => parts.push(`${phpUrlencode(`${k}[${i}]`)}=${phpUrlencode(x)}`));
    else parts.push(`${phpUrlencode(k)}=${phpUrlencode(v)}`);
  }
  return `${base}${parts.length > 0 ? `?${parts.join('&')}` : ''}${hash}`;
}

/**
 * Merges the login response's query parameters into a request URL as the reference does
 * (example 081): the request's own parameters that the login does not set keep their place;
 * the login parameters follow in their configured order. A parameter the request already has
 * becomes a list, the request's value(s) first and the login value last, and moves to the
 * login parameter's position:
 * `?debug=1&secretKey=none` + `{apiToken, secretKey}` → `?debug=1&apiToken=…&secretKey[0]=none&secretKey[1]=…`.
 */
export function mergeLoginQuery(url: string, extra: JsonObject): string {
  const { base, query, hash } = parseUrlQuery(url);
  const merged = new Map<string, QueryValue>();
  for (const [k, raw] of Object.entries(extra)) {
    const v = csvCell(raw);
    const old = query.get(k);
    merged.set(k, old === undefined ? v : Array.isArray(old) ? [...old, v] : [old, v]);
    query.delete(k);
  }
  for (const [k, v] of merged) query.set(k, v);
  return serializeQuery(base, query, hash);
}

/** Sets query parameters (replacing existing ones, new ones appended). */
function setQuery(url: string, extra: JsonObject): string {
  const { base, query, hash } = parseUrlQuery(url);
  for (const [k, v] of Object.entries(extra)) query.set(k, csvCell(v));
  return serializeQuery(base, query, hash);
}

function stringHeaders(values: JsonObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) out[k] = csvCell(v);
  return out;
}

export interface AuthDeps {
  config: ExtractorConfig;
  client: HttpClient;
  defaults: RequestDefaults;
  log: (message: string, level?: 'info' | 'warning' | 'error') => void;
  /** The clock (ms since the epoch; default Date.now). */
  now?: () => number;
  /** The random source of nonces (default crypto.randomBytes). */
  random?: (bytes: number) => Buffer;
}

class NoAuth implements Authenticator {
  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    return req;
  }
}

class QueryAuth implements Authenticator {
  constructor(
    private readonly query: JsonObject,
    private readonly attr: Record<string, Json>,
    private readonly client: HttpClient,
    private readonly now: () => number,
  ) {}

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    const own: Record<string, Json> = {};
    for (const [k, v] of parseUrlQuery(req.url).query) own[k] = Array.isArray(v) ? v.join(',') : v;
    const values = buildValues(this.query, { attr: this.attr, query: own }, { now: this.now });
    this.client.addSecrets(Object.values(values).filter(isScalar).map(csvCell));
    return { ...req, url: setQuery(req.url, values) };
  }
}

/** Headers and query parameters obtained from a login response, valid until `expires`. */
interface Session {
  headers: Record<string, string>;
  query: JsonObject;
  expires: number | null;
}

class LoginAuth implements Authenticator {
  private session: Session | null = null;
  private readonly now: () => number;

  constructor(
    private readonly auth: Extract<AuthConfig, { type: 'login' | 'oauth20.login' }>,
    private readonly deps: AuthDeps,
    private readonly contexts: FunctionContexts,
  ) {
    this.now = deps.now ?? Date.now;
  }

  private nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private async logIn(): Promise<Session> {
    const lr = this.auth.loginRequest;
    const params = buildValues(lr.params, this.contexts, { now: this.now });
    const headers = stringHeaders(buildValues(lr.headers, this.contexts, { now: this.now }));
    // The login request gets the default headers but not api.http.defaultOptions params.
    const prepared = prepareRequest(
      { endpoint: lr.endpoint, params, method: lr.method },
      { ...this.deps.defaults, defaultParams: {}, headers: { ...this.deps.defaults.headers, ...headers } },
    );
    const res = await this.deps.client.send(prepared);
    let response: Json;
    if (this.auth.format === 'text') response = { data: res.text };
    else {
      try {
        response = JSON.parse(res.text) as Json;
      } catch (err) {
        throw new UserError(`Invalid JSON response from the login request ${lr.endpoint}: ${(err as Error).message}`);
      }
      if (!isObject(response) && !Array.isArray(response)) response = { data: response };
    }
    const ctx: FunctionContexts = { ...this.contexts, response: flattenContext(response) };
    const resolve = (values: JsonObject): JsonObject => {
      const built = buildValues(values, ctx, { now: this.now });
      // Backward compatibility of the reference: a plain string that is a path in the response
      // is replaced by the value found there.
      for (const [k, v] of Object.entries(built)) {
        if (typeof v !== 'string') continue;
        try {
          built[k] = getDataFromPath(v, response, '.', true) as Json;
        } catch (err) {
          if (!(err instanceof PathNotFound)) throw err;
        }
      }
      return built;
    };
    const session: Session = {
      headers: stringHeaders(resolve(this.auth.apiRequest.headers)),
      query: resolve(this.auth.apiRequest.query),
      expires: this.expiry(response),
    };
    this.deps.client.addSecrets([...Object.values(session.headers), ...Object.values(session.query).filter(isScalar).map(csvCell)]);
    return session;
  }

  private expiry(response: Json): number | null {
    const e = this.auth.expires;
    if (e === null || e === undefined) return null;
    if (isNumeric(e)) return this.nowSeconds() + Number(e);
    if (isObject(e)) {
      const raw = getDataFromPath(String(e.response), response, '.');
      let expiry: number;
      if (typeof raw === 'number' && Number.isInteger(raw)) expiry = raw;
      else {
        const parsed = phpStrtotime(csvCell(raw), this.nowSeconds());
        if (parsed === false) throw new UserError(`Login authentication returned an expiry time that cannot be read: '${csvCell(raw)}'`);
        expiry = parsed;
      }
      if (e.relative) expiry += this.nowSeconds();
      if (expiry < this.nowSeconds()) throw new UserError(`Login authentication returned expiry time before current time: '${csvCell(raw)}'`);
      return expiry;
    }
    return null;
  }

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    if (!this.session || (this.session.expires !== null && this.nowSeconds() > this.session.expires)) {
      this.session = await this.logIn();
    }
    const url = Object.keys(this.session.query).length > 0 ? mergeLoginQuery(req.url, this.session.query) : req.url;
    return { ...req, url, headers: { ...req.headers, ...this.session.headers } };
  }
}

/** The reference's `request` function context (RequestContext) of a prepared request. */
export function requestContext(req: PreparedRequest): Record<string, Json> {
  const u = new URL(req.url);
  const queryString = u.search.replace(/^\?/, '');
  return {
    url: u.toString(),
    path: u.pathname,
    queryString,
    method: req.method,
    hostname: u.hostname,
    port: u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80,
    resource: `${u.pathname}${queryString ? `?${queryString}` : ''}`,
  };
}

/** The `query` function context: the request's query parameters (decoded; a list joined by commas). */
function queryContext(url: string): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [k, v] of parseUrlQuery(url).query) out[k] = Array.isArray(v) ? v.join(',') : v;
  return out;
}

/**
 * `oauth20`: headers and query parameters built per request (reference OAuth20Context): the
 * `authorization` context holds the credentials' data (`data` or `data.<path>`), `clientId`, a
 * `timestamp` and a 16-hex-digit `nonce`; `request` and `query` describe the request.
 */
class OAuth20Auth implements Authenticator {
  private secretsAdded = false;

  constructor(
    private readonly auth: Extract<AuthConfig, { type: 'oauth20' }>,
    private readonly contexts: FunctionContexts,
    private readonly client: HttpClient,
    private readonly now: () => number,
    private readonly random: (bytes: number) => Buffer,
  ) {}

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    const authorization: Record<string, Json> = {
      ...this.contexts.authorization,
      clientId: this.contexts.consumer?.client_id ?? null,
      nonce: this.random(8).toString('hex'),
      timestamp: Math.floor(this.now() / 1000),
    };
    const ctx: FunctionContexts = { ...this.contexts, authorization, request: requestContext(req), query: queryContext(req.url) };
    const headers = stringHeaders(buildValues(this.auth.headers, ctx, { now: this.now }));
    const query = buildValues(this.auth.query, ctx, { now: this.now });
    if (!this.secretsAdded) {
      // Values that hold the token (the first request's; later ones differ only in time and nonce).
      this.client.addSecrets([...Object.values(headers), ...Object.values(query).filter(isScalar).map(csvCell)]);
      this.secretsAdded = true;
    }
    const url = Object.keys(query).length > 0 ? setQuery(req.url, query) : req.url;
    return { ...req, url, headers: { ...req.headers, ...headers } };
  }
}

/** PHP rawurlencode (RFC 3986): everything but `A-Za-z0-9-_.~` percent-encoded. */
function rawurlencode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Query parameters as PHP's Query::parse reads them (decoded, in order; later duplicates kept apart). */
function parsePairs(query: string): [string, string][] {
  const out: [string, string][] = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    out.push([phpUrldecode(eq >= 0 ? part.slice(0, eq) : part), eq >= 0 ? phpUrldecode(part.slice(eq + 1)) : '']);
  }
  return out;
}

/**
 * The OAuth 1.0a `Authorization` header of a request (RFC 5849, HMAC-SHA1), as guzzle's
 * oauth-subscriber builds it: the signature base string holds the oauth parameters, a form
 * body's parameters and the query's (the first of a name wins), sorted by name; the URL
 * without its query (default port dropped). Pure.
 */
export function oauth1Header(
  req: PreparedRequest,
  creds: { consumerKey: string; consumerSecret: string; token: string; tokenSecret: string },
  timestamp: number,
  nonce: string,
): string {
  const oauth: Record<string, string> = {
    oauth_consumer_key: creds.consumerKey,
    oauth_nonce: nonce,
    oauth_signature_method: 'HMAC-SHA1',
    oauth_timestamp: String(timestamp),
    oauth_token: creds.token,
    oauth_version: '1.0',
  };
  const params = new Map<string, string>(Object.entries(oauth));
  const contentType = Object.entries(req.headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
  const add = (pairs: [string, string][]) => {
    for (const [k, v] of pairs) if (!params.has(k)) params.set(k, v);
  };
  if (contentType === 'application/x-www-form-urlencoded' && req.body !== undefined) add(parsePairs(req.body));
  const u = new URL(req.url);
  add(parsePairs(u.search.replace(/^\?/, '')));
  const sorted = [...params.keys()].sort();
  const paramString = sorted.map((k) => `${rawurlencode(k)}=${rawurlencode(params.get(k) as string)}`).join('&');
  const baseString = `${req.method.toUpperCase()}&${rawurlencode(`${u.protocol}//${u.host}${u.pathname}`)}&${rawurlencode(paramString)}`;
  const key = `${rawurlencode(creds.consumerSecret)}&${rawurlencode(creds.tokenSecret)}`;
  const header: Record<string, string> = { ...oauth, oauth_signature: createHmac('sha1', key).update(baseString).digest('base64') };
  return `OAuth ${Object.keys(header)
    .sort()
    .map((k) => `${k}="${rawurlencode(header[k])}"`)
    .join(', ')}`;
}

/** `oauth10`: every request signed (`authorization.oauth_api.credentials`: `#data` with oauth_token and oauth_token_secret, `appKey`, `#appSecret`). */
class OAuth10Auth implements Authenticator {
  private readonly creds: { consumerKey: string; consumerSecret: string; token: string; tokenSecret: string };

  constructor(
    config: ExtractorConfig,
    client: HttpClient,
    private readonly now: () => number,
    private readonly random: (bytes: number) => Buffer,
  ) {
    const c = config.oauthCredentials;
    if (!c) throw new UserError("OAuth 1.0 authentication needs 'authorization.oauth_api.credentials' in the configuration");
    for (const key of ['#data', 'appKey', '#appSecret']) {
      if (phpEmpty(c[key])) throw new UserError(`Missing '${key}' for OAuth 1.0 authorization.`);
    }
    let data: Json;
    try {
      data = JSON.parse(String(c['#data'])) as Json;
    } catch {
      throw new UserError("OAuth 1.0 credentials '#data' are not valid JSON");
    }
    if (!isObject(data) || typeof data.oauth_token !== 'string' || typeof data.oauth_token_secret !== 'string') {
      throw new UserError("OAuth 1.0 credentials '#data' must hold 'oauth_token' and 'oauth_token_secret'");
    }
    this.creds = { consumerKey: csvCell(c.appKey), consumerSecret: csvCell(c['#appSecret']), token: data.oauth_token, tokenSecret: data.oauth_token_secret };
    client.addSecrets([this.creds.token, this.creds.tokenSecret, this.creds.consumerSecret]);
  }

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    const header = oauth1Header(req, this.creds, Math.floor(this.now() / 1000), this.random(20).toString('hex'));
    return { ...req, headers: { ...req.headers, Authorization: header } };
  }
}

/** OAuth credentials (`authorization.oauth_api.credentials`) as function contexts. */
function oauthContexts(config: ExtractorConfig, format: string): FunctionContexts {
  const creds = config.oauthCredentials;
  if (!creds) throw new UserError("OAuth authentication needs 'authorization.oauth_api.credentials' in the configuration");
  const raw = creds['#data'];
  let data: Json = typeof raw === 'string' ? raw : (raw ?? '');
  let user: Record<string, Json> = {};
  if (typeof raw === 'string') {
    try {
      const parsed = JSON.parse(raw) as Json;
      user = flattenContext(parsed);
      if (format === 'json') data = parsed;
    } catch {
      if (format === 'json') throw new UserError("OAuth credentials '#data' are not valid JSON");
    }
  }
  const authorization: Record<string, Json> = isObject(data) ? flattenContext({ data }) : { data };
  const consumer = { client_id: creds.appKey ?? null, client_secret: creds['#appSecret'] ?? null } as Record<string, Json>;
  return { attr: config.attributes, authorization, user, consumer };
}

export function createAuthenticator(deps: AuthDeps): Authenticator {
  const { config } = deps;
  const auth = config.auth;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? randomBytes;
  switch (auth.type) {
    case 'none':
    case 'basic': // the Authorization header is a default header of every request
      return new NoAuth();
    case 'query':
      return new QueryAuth(auth.query, config.attributes, deps.client, now);
    case 'login':
      return new LoginAuth(auth, deps, { attr: config.attributes });
    case 'oauth20.login':
      return new LoginAuth(auth, deps, oauthContexts(config, auth.format));
    case 'oauth20':
      return new OAuth20Auth(auth, oauthContexts(config, auth.format), deps.client, now, random);
    case 'oauth10':
      return new OAuth10Auth(config, deps.client, now, random);
  }
}
