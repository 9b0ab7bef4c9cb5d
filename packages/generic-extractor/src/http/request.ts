/**
 * One request of a job (juicer's RestRequest) and how it becomes a URL and a body:
 * GET parameters go into the query string (merged over the endpoint's own query, PHP
 * `http_build_query` encoding), POST parameters into a JSON body, FORM into a form body.
 * Pure.
 */
import { httpBuildQuery, phpJsonEncode, phpUrldecode, arrayReplaceRecursive, type JsonObject } from '../php.js';

export interface RestRequest {
  endpoint: string;
  params: JsonObject;
  method: 'GET' | 'POST' | 'FORM';
}

/** The job configuration a scroller builds requests from; the cursor scroller mutates `params`. */
export interface JobRequestConfig {
  endpoint: string;
  params: JsonObject;
  method: 'GET' | 'POST' | 'FORM';
  /** Id used in log lines. */
  id: string;
}

export function requestFromJob(job: { endpoint: string; params: JsonObject; method: RestRequest['method'] }): RestRequest {
  return { endpoint: job.endpoint, params: { ...job.params }, method: job.method };
}

/**
 * `buildUrl(endpoint, params)`: the endpoint's own query (values url-decoded) with `params`
 * replaced over it. Without params the endpoint is used byte for byte.
 */
export function buildUrl(endpoint: string, params: JsonObject): string {
  const clean: JsonObject = {};
  for (const [k, v] of Object.entries(params)) if (k !== '') clean[k] = v;
  if (Object.keys(clean).length === 0) return endpoint;
  const hashAt = endpoint.indexOf('#');
  const withoutHash = hashAt >= 0 ? endpoint.slice(0, hashAt) : endpoint;
  const q = withoutHash.indexOf('?');
  const path = q >= 0 ? withoutHash.slice(0, q) : withoutHash;
  const existing: JsonObject = {};
  if (q >= 0) {
    for (const part of withoutHash.slice(q + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      const key = eq >= 0 ? part.slice(0, eq) : part;
      existing[phpUrldecode(key)] = eq >= 0 ? phpUrldecode(part.slice(eq + 1)) : '';
    }
  }
  const query = httpBuildQuery({ ...existing, ...clean });
  return query === '' ? path : `${path}?${query}`;
}

/** Resolves an endpoint against `api.baseUrl` (RFC 3986: absolute URL, `/path`, or relative). */
export function resolveUrl(baseUrl: string, endpointWithQuery: string): string {
  return new URL(endpointWithQuery, baseUrl).toString();
}

export interface PreparedRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

export interface RequestDefaults {
  baseUrl: string;
  defaultParams: JsonObject;
  headers: Record<string, string>;
}

/** The HTTP request for a RestRequest: defaults merged under it, then URL or body built. */
export function prepareRequest(req: RestRequest, defaults: RequestDefaults): PreparedRequest {
  const params = arrayReplaceRecursive(defaults.defaultParams, req.params) as JsonObject;
  const headers = { ...defaults.headers };
  let url: string;
  let body: string | undefined;
  let method: 'GET' | 'POST' = 'GET';
  if (req.method === 'GET') {
    url = resolveUrl(defaults.baseUrl, buildUrl(req.endpoint, params));
  } else {
    method = 'POST';
    url = resolveUrl(defaults.baseUrl, req.endpoint);
    if (req.method === 'POST') {
      headers['Content-Type'] = 'application/json';
      body = Object.keys(params).length === 0 ? '[]' : phpJsonEncode(params);
    } else {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = httpBuildQuery(params);
    }
  }
  return { url, method, headers, body };
}
