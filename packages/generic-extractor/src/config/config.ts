/**
 * Configuration of `keboola.ex-generic-v2` (`config.json` → `parameters.api`, `parameters.config`):
 * validated into typed values with messages a user can act on. Features the extractor does not
 * implement (login/OAuth authentication, user functions, mappings, iterations, SSH/TLS/AWS) are
 * rejected here by name instead of being silently ignored.
 */
import { UserError } from '../errors.js';
import { parseAwsSignature, type AwsSignature } from '../auth/aws-signature.js';
import { parseSshProxy, type SshProxy } from '../http/ssh-proxy.js';
import { buildValues, evaluate, flattenContext, type EvaluateOptions, type FunctionContexts } from './functions.js';
import { isObject, phpEmpty, type Json, type JsonObject } from '../php.js';

export const DEFAULT_RETRY_CODES = [500, 502, 503, 504, 408, 420, 429];
/** The reference's default `retryConfig.curl.codes`: timeout, host not resolved, refused, TLS, empty reply, receive error. */
export const DEFAULT_CURL_CODES = [28, 6, 7, 35, 52, 56];
/** Seconds the backoff of one request may take in all (`retryConfig.maxTime`), so a dead API fails fast. */
export const DEFAULT_RETRY_MAX_TIME = 30;
/** Upper bound on pages per job when the configuration sets none (no run loops forever). */
export const DEFAULT_MAX_PAGES = 10_000;

export interface JobConfig {
  endpoint: string;
  params: JsonObject;
  method: 'GET' | 'POST' | 'FORM';
  dataType?: string;
  dataField: unknown;
  responseFilter: string[];
  responseFilterDelimiter: string;
  children: JobConfig[];
  placeholders: Record<string, string | JsonObject>;
  recursionFilter?: string;
  scroller?: string;
  userData?: Json;
}

export interface RetryConfig {
  maxRetries: number;
  /** HTTP status codes retried (`retryConfig.http.codes`). */
  codes: number[];
  retryHeader: string;
  /** libcurl error numbers retried (`retryConfig.curl.codes`); transport errors map to them. */
  curlCodes: number[];
  /** Seconds since a request's first attempt after which no backoff retry is made (`retryConfig.maxTime`, Sluice's). */
  maxTimeSeconds: number;
}

/** A login request (login and oauth20.login authentication). */
export interface LoginConfig {
  endpoint: string;
  method: 'GET' | 'POST' | 'FORM';
  params: JsonObject;
  headers: JsonObject;
}

export type AuthConfig =
  | { type: 'none' }
  | { type: 'basic'; username: string; password: string }
  /** `query` values may hold user functions (contexts attr, query): evaluated per request. */
  | { type: 'query'; query: JsonObject }
  | {
      type: 'login' | 'oauth20.login';
      loginRequest: LoginConfig;
      apiRequest: { headers: JsonObject; query: JsonObject };
      expires: Json;
      /** `json` (default) or `text` (the whole body is the value `data`). */
      format: string;
    }
  | { type: 'oauth20'; headers: JsonObject; query: JsonObject; format: string }
  /** OAuth 1.0a, HMAC-SHA1 signature in the Authorization header (credentials from `authorization.oauth_api`). */
  | { type: 'oauth10' };

export interface ExtractorConfig {
  baseUrl: string;
  /** Headers on every request: api.http.headers, then config.http.headers. */
  headers: Record<string, string>;
  /** api.http.defaultOptions (params, headers), merged under every request. */
  defaultParams: JsonObject;
  defaultHeaders: Record<string, string>;
  ignoreErrors: number[];
  pagination: JsonObject | null;
  auth: AuthConfig;
  retry: RetryConfig;
  outputBucket: string;
  incrementalOutput: boolean;
  debug: boolean;
  jobs: JobConfig[];
  userData: Json;
  /** config.mappings: data type → column mapping. */
  mappings: JsonObject | null;
  /** parameters.config flattened for user functions (`{"attr": "a.b"}`). */
  attributes: Record<string, Json>;
  /** `authorization.oauth_api.credentials` (OAuth), if any. */
  oauthCredentials: JsonObject | null;
  /** `api.caCertificate`: CA certificates (PEM) trusted for TLS beside the system's. */
  caCertificate?: string;
  /** `api.#clientCertificate`: the TLS client certificate followed by its private key (PEM). */
  clientCertificate?: string;
  /** `parameters.aws.signature.credentials`: every request is signed with AWS Signature V4. */
  aws?: AwsSignature;
  /** `parameters.sshProxy`: every connection goes through this SSH server. */
  sshProxy?: SshProxy;
  /** Request timeout in seconds (config.http.timeout / api.http.timeout), default 300. */
  timeoutSeconds: number;
  /** Page bound per job when no forceStop.pages is configured (config.maxPages). */
  maxPages: number;
  compatLevel: number;
}

const fail = (message: string): never => {
  throw new UserError(`Invalid configuration: ${message}`);
};

/** A map of header values; user functions in it are evaluated with the `attr` context. */
function stringMap(value: unknown, where: string, contexts: FunctionContexts = {}, opts?: EvaluateOptions): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) return fail(`${where} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, raw] of Object.entries(buildValues(value, contexts, opts))) {
    const v = raw;
    if (!['string', 'number', 'boolean'].includes(typeof v)) fail(`${where}.${k} must be a string`);
    out[k] = String(v);
  }
  return out;
}

function parseJob(raw: unknown, where: string): JobConfig {
  if (!isObject(raw)) return fail(`${where} must be an object`);
  if (typeof raw.endpoint !== 'string' || raw.endpoint === '') fail(`${where}.endpoint must be a non-empty string`);
  const params = raw.params ?? {};
  if (!isObject(params)) fail(`${where}.params must be an object`);
  const method = String(raw.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'POST' && method !== 'FORM') fail(`${where}.method must be GET, POST or FORM, not '${raw.method}'`);
  let responseFilter: string[] = [];
  if (!phpEmpty(raw.responseFilter)) {
    const rf = raw.responseFilter;
    if (typeof rf === 'string') responseFilter = [rf];
    else if (Array.isArray(rf) && rf.every((x) => typeof x === 'string')) responseFilter = rf as string[];
    else fail(`${where}.responseFilter must be a string or an array of strings`);
  }
  const placeholders = raw.placeholders ?? {};
  if (!isObject(placeholders)) fail(`${where}.placeholders must be an object`);
  for (const [name, p] of Object.entries(placeholders as JsonObject)) {
    if (isObject(p)) {
      if (typeof p.path !== 'string' || p.path === '') {
        fail(`The path for placeholder '${name}' must be a string value or an object containing 'path' and 'function'.`);
      }
    } else if (typeof p !== 'string') fail(`${where}.placeholders.${name} must be a path string`);
  }
  const children = raw.children ?? [];
  if (!Array.isArray(children)) fail(`${where}.children must be an array`);
  if (raw.dataType !== undefined && typeof raw.dataType !== 'string') fail(`${where}.dataType must be a string`);
  if (raw.recursionFilter !== undefined && typeof raw.recursionFilter !== 'string') fail(`${where}.recursionFilter must be a string`);
  if (raw.scroller !== undefined && typeof raw.scroller !== 'string') fail(`${where}.scroller must be a string`);
  return {
    endpoint: raw.endpoint as string,
    params: params as JsonObject,
    method: method as JobConfig['method'],
    dataType: phpEmpty(raw.dataType) ? undefined : (raw.dataType as string),
    dataField: raw.dataField,
    responseFilter,
    responseFilterDelimiter: phpEmpty(raw.responseFilterDelimiter) ? '.' : String(raw.responseFilterDelimiter),
    children: (children as Json[]).map((c, i) => parseJob(c, `${where}.children[${i}]`)),
    placeholders: placeholders as Record<string, string | JsonObject>,
    recursionFilter: phpEmpty(raw.recursionFilter) ? undefined : (raw.recursionFilter as string),
    scroller: raw.scroller as string | undefined,
    userData: raw.userData,
  };
}

function parseAuth(api: JsonObject, config: JsonObject): AuthConfig {
  const auth = api.authentication;
  if (auth === undefined || auth === null) return { type: 'none' };
  if (!isObject(auth)) return fail('api.authentication must be an object');
  switch (auth.type) {
    case 'basic': {
      const username = config['#username'] ?? config.username;
      const password = config['#password'] ?? config.password;
      if (typeof username !== 'string' || typeof password !== 'string') {
        fail("basic authentication needs 'username' (or '#username') and '#password' (or 'password') in parameters.config");
      }
      return { type: 'basic', username: username as string, password: password as string };
    }
    case 'query':
      if (auth.query !== undefined && !isObject(auth.query)) fail('api.authentication.query must be an object');
      return { type: 'query', query: (auth.query as JsonObject | undefined) ?? {} };
    case 'login':
    case 'oauth20.login': {
      const lr = auth.loginRequest;
      if (!isObject(lr)) return fail(`'loginRequest' is not configured for ${auth.type} authentication`);
      if (typeof lr.endpoint !== 'string' || lr.endpoint === '') fail(`Request endpoint must be set for the ${auth.type} authentication method.`);
      const method = String(lr.method ?? 'GET').toUpperCase();
      if (!['GET', 'POST', 'FORM'].includes(method)) fail('api.authentication.loginRequest.method must be GET, POST or FORM');
      const ar = isObject(auth.apiRequest) ? auth.apiRequest : {};
      const expires = auth.expires ?? null;
      if (expires !== null && !(typeof expires === 'number' || (typeof expires === 'string' && /^-?\d+$/.test(expires)) || (isObject(expires) && typeof expires.response === 'string'))) {
        fail("The 'expires' attribute must be either an integer or an object with 'response' key containing a path in the response");
      }
      return {
        type: auth.type,
        loginRequest: {
          endpoint: lr.endpoint as string,
          method: method as LoginConfig['method'],
          params: isObject(lr.params) ? lr.params : {},
          headers: isObject(lr.headers) ? lr.headers : {},
        },
        apiRequest: { headers: isObject(ar.headers) ? ar.headers : {}, query: isObject(ar.query) ? ar.query : {} },
        expires,
        format: typeof auth.format === 'string' ? auth.format : 'json',
      };
    }
    case 'oauth20':
      return {
        type: 'oauth20',
        headers: isObject(auth.headers) ? auth.headers : {},
        query: isObject(auth.query) ? auth.query : {},
        format: typeof auth.format === 'string' ? auth.format : 'text',
      };
    case 'oauth10':
      return { type: 'oauth10' };
    default:
      return fail(`unknown api.authentication.type '${String(auth.type)}' (supported: basic, query, login, oauth10, oauth20, oauth20.login)`);
  }
}

function parseRetry(api: JsonObject): RetryConfig {
  const rc = api.retryConfig;
  const retry: RetryConfig = {
    maxRetries: 10,
    codes: DEFAULT_RETRY_CODES,
    retryHeader: 'Retry-After',
    curlCodes: DEFAULT_CURL_CODES,
    maxTimeSeconds: DEFAULT_RETRY_MAX_TIME,
  };
  if (rc === undefined) return retry;
  if (!isObject(rc)) return fail('api.retryConfig must be an object');
  if (rc.maxRetries !== undefined) {
    if (!Number.isInteger(rc.maxRetries) || (rc.maxRetries as number) < 0) fail('api.retryConfig.maxRetries must be a non-negative integer');
    retry.maxRetries = rc.maxRetries as number;
  }
  if (isObject(rc.http)) {
    if (Array.isArray(rc.http.codes)) retry.codes = rc.http.codes.map(Number);
    if (typeof rc.http.retryHeader === 'string') retry.retryHeader = rc.http.retryHeader;
  }
  if (rc.curl !== undefined) {
    if (!isObject(rc.curl) || (rc.curl.codes !== undefined && !(Array.isArray(rc.curl.codes) && rc.curl.codes.every((c) => Number.isInteger(Number(c)))))) {
      fail('api.retryConfig.curl.codes must be an array of libcurl error numbers (e.g. [6, 7, 28])');
    }
    if (Array.isArray((rc.curl as JsonObject).codes)) retry.curlCodes = ((rc.curl as JsonObject).codes as Json[]).map(Number);
  }
  if (rc.maxTime !== undefined) {
    if (typeof rc.maxTime !== 'number' || !(rc.maxTime >= 0)) fail('api.retryConfig.maxTime must be a non-negative number of seconds');
    retry.maxTimeSeconds = rc.maxTime as number;
  }
  return retry;
}

/**
 * Validates `config.json` contents. Throws UserError with the first problem found. `opts.now`
 * is the clock of user functions evaluated here (`baseUrl`, headers).
 */
export function parseConfig(root: unknown, opts: EvaluateOptions = {}): ExtractorConfig {
  if (!isObject(root)) return fail('config.json must hold a JSON object');
  const parameters = root.parameters;
  if (!isObject(parameters)) return fail("'parameters' must be an object");
  const api = parameters.api;
  const config = parameters.config;
  if (!isObject(api)) return fail("'parameters.api' must be an object");
  if (!isObject(config)) return fail("'parameters.config' must be an object");
  for (const key of ['caCertificate', '#clientCertificate']) {
    if (api[key] !== undefined && (typeof api[key] !== 'string' || !(api[key] as string).includes('-----BEGIN'))) {
      fail(`api.${key} must be a PEM string (-----BEGIN CERTIFICATE----- ...)`);
    }
  }
  if (typeof api['#clientCertificate'] === 'string' && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(api['#clientCertificate'])) {
    fail('api.#clientCertificate must hold the client certificate followed by its private key (PEM)');
  }
  if (config.mappings !== undefined && !isObject(config.mappings)) fail('config.mappings must be an object');

  const attrs: FunctionContexts = { attr: flattenContext(config) };
  const baseUrlValue = isObject(api.baseUrl) ? evaluate(api.baseUrl, attrs, opts) : api.baseUrl;
  if (typeof baseUrlValue !== 'string' || baseUrlValue === '') fail('api.baseUrl must be a non-empty string');
  let baseUrl: URL;
  try {
    baseUrl = new URL(baseUrlValue as string);
  } catch {
    return fail(`api.baseUrl '${baseUrlValue}' is not a valid URL`);
  }
  if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') fail('api.baseUrl must be an http:// or https:// URL');

  const http = isObject(api.http) ? api.http : {};
  if (api.http !== undefined && !isObject(api.http)) fail('api.http must be an object');
  const configHttp = isObject(config.http) ? config.http : {};
  const headers = { ...stringMap(http.headers, 'api.http.headers', attrs, opts), ...stringMap(configHttp.headers, 'config.http.headers', attrs, opts) };
  if (Array.isArray(http.requiredHeaders)) {
    for (const h of http.requiredHeaders) {
      if (!isObject(configHttp.headers) || !(String(h) in configHttp.headers)) {
        fail(`missing required header '${h}' in config.http.headers`);
      }
    }
  }
  const defaults = isObject(http.defaultOptions) ? http.defaultOptions : {};
  const defaultParams = isObject(defaults.params) ? defaults.params : {};
  const defaultHeaders = stringMap(defaults.headers, 'api.http.defaultOptions.headers', attrs, opts);
  const ignoreErrors = Array.isArray(http.ignoreErrors) ? http.ignoreErrors.map(Number) : [];

  let pagination: JsonObject | null = null;
  if (api.pagination !== undefined && api.pagination !== null) {
    if (!isObject(api.pagination)) fail('api.pagination must be an object');
    pagination = api.pagination as JsonObject;
    if (pagination.pages !== undefined && !Number.isInteger(pagination.pages)) fail('api.pagination.pages must be an integer');
  }

  if (!Array.isArray(config.jobs) || config.jobs.length === 0) fail("'config.jobs' must be a non-empty array");
  const jobs = (config.jobs as Json[]).map((j, i) => parseJob(j, `config.jobs[${i}]`));

  const timeout = configHttp.timeout ?? http.timeout ?? 300;
  if (typeof timeout !== 'number' || !(timeout > 0)) fail('http.timeout must be a positive number of seconds');
  const maxPages = config.maxPages ?? DEFAULT_MAX_PAGES;
  if (!Number.isInteger(maxPages) || (maxPages as number) < 1) fail('config.maxPages must be a positive integer');
  if (config.outputBucket !== undefined && typeof config.outputBucket !== 'string') fail('config.outputBucket must be a string');

  // As the reference: an empty compatLevel (unset, 0) means the latest (3); 1 or less selects
  // the legacy JSON parser (php-jsonparser 2.x), 2 the current parser with the old
  // responseFilter behaviour.
  const compatLevel = phpEmpty(config.compatLevel) ? 3 : config.compatLevel;
  if (typeof compatLevel !== 'number' || !Number.isInteger(compatLevel)) fail('config.compatLevel must be an integer');

  return {
    baseUrl: baseUrlValue as string,
    headers,
    defaultParams,
    defaultHeaders,
    ignoreErrors,
    pagination,
    auth: parseAuth(api, config),
    retry: parseRetry(api),
    // As the reference: outputBucket, else `ex-api-<api.name|generic>-<config.id>`, else no bucket.
    outputBucket: !phpEmpty(config.outputBucket)
      ? (config.outputBucket as string)
      : !phpEmpty(config.id)
        ? `ex-api-${phpEmpty(api.name) ? 'generic' : String(api.name)}-${String(config.id)}`
        : '',
    incrementalOutput: config.incrementalOutput === true,
    debug: !phpEmpty(config.debug),
    jobs,
    userData: config.userData ?? null,
    attributes: attrs.attr,
    mappings: isObject(config.mappings) ? config.mappings : null,
    oauthCredentials: isObject(root.authorization) && isObject(root.authorization.oauth_api) && isObject(root.authorization.oauth_api.credentials)
      ? root.authorization.oauth_api.credentials
      : null,
    caCertificate: api.caCertificate as string | undefined,
    clientCertificate: api['#clientCertificate'] as string | undefined,
    aws: parseAwsSignature(parameters.aws),
    sshProxy: parseSshProxy(parameters.sshProxy),
    timeoutSeconds: timeout as number,
    maxPages: maxPages as number,
    compatLevel: compatLevel as number,
  };
}

/**
 * The configurations to run: one, or one per `parameters.iterations` item (its keys override
 * `parameters.config`). Iterations writing to one bucket share that bucket's tables.
 */
export function expandIterations(raw: unknown): unknown[] {
  if (!isObject(raw) || !isObject(raw.parameters) || raw.parameters.iterations === undefined) return [raw];
  const { iterations, ...parameters } = raw.parameters;
  if (!Array.isArray(iterations) || iterations.length === 0) return fail("'parameters.iterations' must be a non-empty array");
  return iterations.map((it, i) => {
    if (!isObject(it)) return fail(`parameters.iterations[${i}] must be an object`);
    const config = isObject(parameters.config) ? parameters.config : {};
    return { ...raw, parameters: { ...parameters, config: { ...config, ...it } } };
  });
}
