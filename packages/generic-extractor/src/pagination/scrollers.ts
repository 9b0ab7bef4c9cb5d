/**
 * Paging strategies: how the next request is built from the job, the last
 * response and the data found in it. Each scroller is a small state machine; `next` returning
 * null means "stop" and the reason is reported through `onStop`. Pure (no I/O).
 */
import { UserError } from '../errors.js';
import { getDataFromPath } from '../response/data-path.js';
import { isNumeric, isObject, phpEmpty, phpInt, arrayReplaceRecursive, type Json, type JsonObject } from '../php.js';
import { requestFromJob, type JobRequestConfig, type RestRequest } from '../http/request.js';

export type StopListener = (reason: string) => void;

export interface Scroller {
  first(job: JobRequestConfig): RestRequest | null;
  next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null;
  /** Forgets counters and pointers (a child job starts from scratch). */
  reset(): void;
  /** An independent copy (state included), for child jobs. */
  clone(): Scroller;
  /** Where stop reasons go. */
  onStop: StopListener;
}

export abstract class BaseScroller implements Scroller {
  onStop: StopListener = () => undefined;
  abstract first(job: JobRequestConfig): RestRequest | null;
  abstract next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null;
  reset(): void {}
  clone(): Scroller {
    const copy = Object.assign(Object.create(Object.getPrototypeOf(this)) as BaseScroller, this);
    return copy;
  }
  protected stop(reason: string): null {
    this.onStop(reason);
    return null;
  }
}

/** No pagination: exactly one request. */
export class NoScroller extends BaseScroller {
  first(job: JobRequestConfig): RestRequest {
    return requestFromJob(job);
  }
  next(): null {
    return null;
  }
}

function optionalString(options: JsonObject, key: string, fallback: string): string {
  const v = options[key];
  return phpEmpty(v) ? fallback : String(v);
}

function parseLimit(value: Json | undefined, method: string, required: boolean): number | null {
  if (value === undefined || value === null || value === '') {
    if (required) throw new UserError(`Missing 'pagination.limit' attribute required for ${method} pagination`);
    return null;
  }
  if (!isNumeric(value)) throw new UserError(`'pagination.limit' must be a number for ${method} pagination, not '${String(value)}'`);
  return phpInt(value);
}

function boolOption(options: JsonObject, key: string, fallback: boolean): boolean {
  return options[key] === undefined ? fallback : !phpEmpty(options[key]);
}

/** `offset`: `limit` items per page, `offset` grows by the limit; stops on a short page. */
export class OffsetScroller extends BaseScroller {
  private readonly limit: number;
  private readonly limitParam: string;
  private readonly offsetParam: string;
  private readonly firstPageParams: boolean;
  private readonly offsetFromJob: boolean;
  private pointer = 0;

  constructor(options: JsonObject) {
    super();
    this.limit = parseLimit(options.limit, 'offset', true) as number;
    this.limitParam = optionalString(options, 'limitParam', 'limit');
    this.offsetParam = optionalString(options, 'offsetParam', 'offset');
    this.firstPageParams = boolOption(options, 'firstPageParams', true);
    this.offsetFromJob = boolOption(options, 'offsetFromJob', false);
  }

  private effectiveLimit(job: JobRequestConfig): number {
    const own = job.params[this.limitParam];
    return phpEmpty(own) ? this.limit : phpInt(own);
  }

  private request(job: JobRequestConfig): RestRequest {
    const req = requestFromJob(job);
    req.params = { ...job.params, [this.limitParam]: this.effectiveLimit(job), [this.offsetParam]: this.pointer };
    return req;
  }

  first(job: JobRequestConfig): RestRequest {
    if (this.offsetFromJob && !phpEmpty(job.params[this.offsetParam])) this.pointer = phpInt(job.params[this.offsetParam]);
    return this.firstPageParams ? this.request(job) : requestFromJob(job);
  }

  next(job: JobRequestConfig, _response: Json, data: Json[]): RestRequest | null {
    const limit = this.effectiveLimit(job);
    if (data.length < limit) {
      this.reset();
      return this.stop(data.length === 0 ? 'Offset limit reached, stopping scrolling.' : 'Pagination stopped, response is smaller than limit.');
    }
    this.pointer += limit;
    return this.request(job);
  }

  override reset(): void {
    this.pointer = 0;
  }
}

/** `pagenum`: page number from `firstPage`; stops on an empty page or one shorter than `limit`. */
export class PageScroller extends BaseScroller {
  private readonly limit: number | null;
  private readonly pageParam: string;
  private readonly limitParam: string;
  private readonly firstPage: number;
  private readonly firstPageParams: boolean;
  private page: number;

  constructor(options: JsonObject) {
    super();
    this.limit = parseLimit(options.limit, 'pagenum', false);
    this.pageParam = optionalString(options, 'pageParam', 'page');
    this.limitParam = optionalString(options, 'limitParam', 'limit');
    this.firstPage = options.firstPage !== undefined && options.firstPage !== null ? phpInt(options.firstPage) : 1;
    this.firstPageParams = boolOption(options, 'firstPageParams', true);
    this.page = this.firstPage;
  }

  private effectiveLimit(job: JobRequestConfig): number | null {
    const own = job.params[this.limitParam];
    return phpEmpty(own) ? this.limit : phpInt(own);
  }

  private request(job: JobRequestConfig): RestRequest {
    const req = requestFromJob(job);
    const extra: JsonObject = { [this.pageParam]: this.page };
    const limit = this.effectiveLimit(job);
    if (limit !== null) extra[this.limitParam] = limit;
    req.params = { ...job.params, ...extra };
    return req;
  }

  first(job: JobRequestConfig): RestRequest {
    return this.firstPageParams ? this.request(job) : requestFromJob(job);
  }

  next(job: JobRequestConfig, _response: Json, data: Json[]): RestRequest | null {
    const limit = this.effectiveLimit(job);
    if (limit === null && data.length === 0) {
      this.reset();
      return this.stop('Pagination stopped, response is empty.');
    }
    // PHP 7: `count < null` is always false, so without a limit only an empty page stops.
    if (limit !== null && data.length < limit) {
      this.reset();
      return this.stop('Pagination stopped, response is smaller than limit.');
    }
    this.page += 1;
    return this.request(job);
  }

  override reset(): void {
    this.page = this.firstPage;
  }
}

/** Parses `a=1&b=2` (leading `?` dropped) as PHP parse_str would for flat keys. */
function parseQuery(query: string): JsonObject {
  const out: JsonObject = {};
  for (const part of query.replace(/^\?+/, '').split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    out[decode(eq >= 0 ? part.slice(0, eq) : part)] = eq >= 0 ? decode(part.slice(eq + 1)) : '';
  }
  return out;
}

/** `response.url`: the next page's URL is in the response (`urlKey`); stops when it is empty. */
export class ResponseUrlScroller extends BaseScroller {
  private readonly urlKey: string;
  private readonly delimiter: string;
  private readonly paramIsQuery: boolean;
  private readonly includeParams: boolean;

  constructor(options: JsonObject) {
    super();
    this.urlKey = optionalString(options, 'urlKey', 'next_page');
    this.delimiter = optionalString(options, 'delimiter', '.');
    this.paramIsQuery = boolOption(options, 'paramIsQuery', false);
    this.includeParams = boolOption(options, 'includeParams', false);
  }

  first(job: JobRequestConfig): RestRequest {
    return requestFromJob(job);
  }

  next(job: JobRequestConfig, response: Json): RestRequest | null {
    const nextUrl = getDataFromPath(this.urlKey, response, this.delimiter);
    if (phpEmpty(nextUrl) || typeof nextUrl === 'object') return this.stop('No more pages, stopping pagination.');
    const params: JsonObject = this.includeParams ? { ...job.params } : {};
    if (this.paramIsQuery) {
      return { endpoint: job.endpoint, method: job.method, params: { ...params, ...parseQuery(String(nextUrl)) } };
    }
    return { endpoint: String(nextUrl), method: job.method, params };
  }
}

/** `response.param`: a value in the response (`responseParam`) is sent as `queryParam`. */
export class ResponseParamScroller extends BaseScroller {
  private readonly responseParam: string;
  private readonly queryParam: string;
  private readonly includeParams: boolean;
  private readonly scrollRequest: JsonObject | null;

  constructor(options: JsonObject) {
    super();
    if (phpEmpty(options.responseParam)) throw new UserError("Missing required 'pagination.responseParam' parameter for response.param pagination");
    if (phpEmpty(options.queryParam)) throw new UserError("Missing required 'pagination.queryParam' parameter for response.param pagination");
    this.responseParam = String(options.responseParam);
    this.queryParam = String(options.queryParam);
    this.includeParams = boolOption(options, 'includeParams', false);
    if (options.scrollRequest !== undefined && !isObject(options.scrollRequest)) {
      throw new UserError("'pagination.scrollRequest' must be an object");
    }
    this.scrollRequest = (options.scrollRequest as JsonObject | undefined) ?? null;
  }

  first(job: JobRequestConfig): RestRequest {
    return requestFromJob(job);
  }

  next(job: JobRequestConfig, response: Json): RestRequest | null {
    const value = getDataFromPath(this.responseParam, response, '.');
    if (phpEmpty(value)) return this.stop('No more pages found, stopping pagination.');
    let config: JsonObject = { endpoint: job.endpoint, method: job.method, params: this.includeParams ? { ...job.params } : {} };
    if (this.scrollRequest) config = arrayReplaceRecursive(config, this.scrollRequest) as JsonObject;
    const params = isObject(config.params) ? { ...config.params } : {};
    params[this.queryParam] = value as Json;
    const method = String(config.method ?? 'GET').toUpperCase();
    return {
      endpoint: String(config.endpoint),
      method: method === 'POST' || method === 'FORM' ? method : 'GET',
      params,
    };
  }
}

/** `cursor`: the largest (or smallest) `idKey` seen so far, plus `increment`, sent as `param`. */
export class CursorScroller extends BaseScroller {
  private readonly idKey: string;
  private readonly param: string;
  private readonly increment: number;
  private readonly reverse: boolean;
  private max: number | null = null;
  private min: number | null = null;

  constructor(options: JsonObject) {
    super();
    if (phpEmpty(options.idKey)) throw new UserError("Missing 'pagination.idKey' attribute required for cursor pagination");
    if (phpEmpty(options.param)) throw new UserError("Missing 'pagination.param' attribute required for cursor pagination");
    if (options.increment !== undefined && !Number.isInteger(options.increment)) {
      throw new UserError("'pagination.increment' must be an integer");
    }
    this.idKey = String(options.idKey);
    this.param = String(options.param);
    this.increment = (options.increment as number | undefined) ?? 0;
    this.reverse = boolOption(options, 'reverse', false);
  }

  first(job: JobRequestConfig): RestRequest {
    return requestFromJob(job);
  }

  next(job: JobRequestConfig, _response: Json, data: Json[]): RestRequest | null {
    if (data.length === 0) {
      this.reset();
      return this.stop('No data in response, stopping scrolling.');
    }
    for (const item of data) {
      const value = getDataFromPath(this.idKey, item, '.');
      if (!isNumeric(value)) throw new UserError(`Cursor value '${JSON.stringify(value)}' is not numeric.`);
      const n = phpInt(value);
      if (this.max === null || n > this.max) this.max = n;
      if (this.min === null || n < this.min) this.min = n;
    }
    const cursor = (this.reverse ? (this.min as number) : (this.max as number)) + this.increment;
    // The reference sets the parameter on the job itself: later requests keep it.
    job.params[this.param] = cursor;
    return requestFromJob(job);
  }

  override reset(): void {
    this.max = null;
    this.min = null;
  }
}
