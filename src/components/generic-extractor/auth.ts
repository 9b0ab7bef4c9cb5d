/**
 * Authentication (reference: GE `Authentication/*`): `basic` (Authorization header), `query`
 * (parameters added to every request, user functions may read the request's own query),
 * `login` and `oauth20.login` (a login request first — again once it expires — whose response
 * fills headers and query parameters of the API requests) and `oauth20` (headers/query built
 * from the OAuth credentials). Applied to a prepared request just before it is sent.
 */
import { UserError } from '../contract.js';
import type { AuthConfig, ExtractorConfig } from './config.js';
import { getDataFromPath, PathNotFound } from './data-path.js';
import { buildValues, flattenContext, phpStrtotime, type FunctionContexts } from './functions.js';
import type { HttpClient } from './http-client.js';
import { csvCell, isNumeric, isObject, isScalar, phpUrldecode, phpUrlencode, type Json, type JsonObject } from './php.js';
import { prepareRequest, type PreparedRequest, type RequestDefaults } from './request.js';

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
  now?: () => number;
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
  ) {}

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    const own: Record<string, Json> = {};
    for (const [k, v] of parseUrlQuery(req.url).query) own[k] = Array.isArray(v) ? v.join(',') : v;
    const values = buildValues(this.query, { attr: this.attr, query: own });
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
    const params = buildValues(lr.params, this.contexts);
    const headers = stringHeaders(buildValues(lr.headers, this.contexts));
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
      const built = buildValues(values, ctx);
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

class StaticAuth implements Authenticator {
  constructor(
    private readonly headers: Record<string, string>,
    private readonly query: JsonObject,
  ) {}

  async apply(req: PreparedRequest): Promise<PreparedRequest> {
    const url = Object.keys(this.query).length > 0 ? setQuery(req.url, this.query) : req.url;
    return { ...req, url, headers: { ...req.headers, ...this.headers } };
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
  switch (auth.type) {
    case 'none':
    case 'basic': // the Authorization header is a default header of every request
      return new NoAuth();
    case 'query':
      return new QueryAuth(auth.query, config.attributes, deps.client);
    case 'login':
      return new LoginAuth(auth, deps, { attr: config.attributes });
    case 'oauth20.login':
      return new LoginAuth(auth, deps, oauthContexts(config, auth.format));
    case 'oauth20': {
      const ctx = oauthContexts(config, auth.format);
      const headers = stringHeaders(buildValues(auth.headers, ctx));
      const query = buildValues(auth.query, ctx);
      deps.client.addSecrets([...Object.values(headers), ...Object.values(query).filter(isScalar).map(csvCell)]);
      return new StaticAuth(headers, query);
    }
  }
}

