import { describe, expect, it } from 'vitest';
import { createScroller, selectScroller } from '../src/pagination/pagination.js';
import type { Json, JsonObject } from '../src/php.js';
import type { JobRequestConfig, RestRequest } from '../src/http/request.js';
import type { Scroller } from '../src/pagination/scrollers.js';

const job = (params: JsonObject = {}, endpoint = 'users'): JobRequestConfig => ({ endpoint, params, method: 'GET', id: 'j' });
const items = (n: number): Json[] => Array.from({ length: n }, (_, i) => ({ id: i }));

/** Drives a scroller over scripted pages; returns the requests made (params only) and the stop reason. */
function drive(scroller: Scroller, j: JobRequestConfig, pages: { response?: Json; data: Json[] }[]) {
  const requests: RestRequest[] = [];
  let reason: string | null = null;
  scroller.onStop = (r) => (reason = r);
  let req = scroller.first(j);
  for (const page of pages) {
    if (!req) break;
    requests.push(req);
    req = scroller.next(j, page.response ?? {}, page.data);
  }
  return { requests, reason, pending: req };
}

describe('generic extractor: paging strategies', () => {
  it('offset: limit and offset appended after job params; stops on a short page', () => {
    const { requests, reason } = drive(createScroller({ method: 'offset', limit: '2' }), job({ type: 'a' }), [
      { data: items(2) },
      { data: items(2) },
      { data: items(1) },
    ]);
    expect(requests.map((r) => r.params)).toEqual([
      { type: 'a', limit: 2, offset: 0 },
      { type: 'a', limit: 2, offset: 2 },
      { type: 'a', limit: 2, offset: 4 },
    ]);
    expect(reason).toMatch(/smaller than limit/);
  });

  it('offset: renamed params, firstPageParams false, offsetFromJob and per-job limit', () => {
    const s = createScroller({ method: 'offset', limit: 2, limitParam: 'count', offsetParam: 'skip', firstPageParams: false });
    const { requests } = drive(s, job(), [{ data: items(2) }, { data: items(0) }]);
    expect(requests.map((r) => r.params)).toEqual([{}, { count: 2, skip: 2 }]);
    const o = drive(createScroller({ method: 'offset', limit: 2, offsetParam: 'skip', offsetFromJob: true }), job({ count: 5, skip: 2 }), [
      { data: items(5) },
    ]);
    expect(o.requests[0].params).toEqual({ count: 5, skip: 2, limit: 2 });
    expect(() => createScroller({ method: 'offset' })).toThrow(/Missing 'pagination.limit'/);
  });

  it('pagenum: without limit only an empty page stops; with limit a short page stops', () => {
    const noLimit = drive(createScroller({ method: 'pagenum' }), job(), [{ data: items(1) }, { data: items(1) }, { data: [] }]);
    expect(noLimit.requests.map((r) => r.params)).toEqual([{ page: 1 }, { page: 2 }, { page: 3 }]);
    expect(noLimit.reason).toMatch(/empty/);
    const renamed = drive(createScroller({ method: 'pagenum', limit: 2, limitParam: 'count', pageParam: 'set', firstPage: 0, firstPageParams: false }), job(), [
      { data: items(2) },
      { data: items(1) },
    ]);
    expect(renamed.requests.map((r) => r.params)).toEqual([{}, { set: 1, count: 2 }]);
  });

  it('response.url: follows the next link, stops on an empty or false one', () => {
    const s = createScroller({ method: 'response.url', urlKey: 'links.next', includeParams: true });
    const { requests, reason } = drive(s, job({ account: 123 }), [
      { response: { links: { next: '/users?page=2' } }, data: items(1) },
      { response: { links: { next: false } }, data: items(1) },
    ]);
    expect(requests[1]).toEqual({ endpoint: '/users?page=2', params: { account: 123 }, method: 'GET' });
    expect(reason).toMatch(/No more pages/);
    const q = drive(createScroller({ method: 'response.url', paramIsQuery: true, includeParams: true }), job({ account: 1 }), [
      { response: { next_page: '?page=2' }, data: items(1) },
    ]);
    expect(q.pending).toEqual({ endpoint: 'users', params: { account: 1, page: '2' }, method: 'GET' });
  });

  it('response.param: sends the token; scrollRequest changes endpoint and method', () => {
    const s = createScroller({ method: 'response.param', responseParam: 'scroll.token', queryParam: 'scrollToken', scrollRequest: { endpoint: 'results', method: 'GET' } });
    const j: JobRequestConfig = { endpoint: 'search', params: { object: 'users' }, method: 'POST', id: 'j' };
    const { requests, pending } = drive(s, j, [{ response: { scroll: { token: 'abc' } }, data: items(1) }]);
    expect(requests[0]).toMatchObject({ endpoint: 'search', method: 'POST' });
    expect(pending).toEqual({ endpoint: 'results', method: 'GET', params: { scrollToken: 'abc' } });
  });

  it('cursor: max id (or min with reverse) plus increment, cumulative over pages', () => {
    const s = createScroller({ method: 'cursor', idKey: 'fields.id', param: 'continueAfter' });
    const j = job();
    const { requests, reason } = drive(s, j, [
      { data: [{ fields: { id: 3 } }, { fields: { id: 5 } }] },
      { data: [{ fields: { id: 4 } }] },
      { data: [] },
    ]);
    expect(requests.map((r) => r.params.continueAfter)).toEqual([undefined, 5, 5]);
    expect(reason).toMatch(/No data/);
    const r = drive(createScroller({ method: 'cursor', idKey: 'id', param: 'max', reverse: true, increment: -1 }), job({ startWith: 'last' }), [
      { data: [{ id: 10 }, { id: 8 }] },
    ]);
    expect(r.pending?.params).toEqual({ startWith: 'last', max: 7 });
    expect(() => drive(createScroller({ method: 'cursor', idKey: 'id', param: 'p' }), job(), [{ data: [{ id: 'x' }] }])).toThrow(/not numeric/);
  });

  it('multiple: a job picks its scroller by name, else the default', () => {
    const options = { method: 'multiple', default: 'list', scrollers: { list: { method: 'offset', limit: 2 }, search: { method: 'pagenum' } } };
    const a = createScroller(options);
    selectScroller(a, undefined);
    expect(a.first(job())?.params).toEqual({ limit: 2, offset: 0 });
    const b = createScroller(options);
    selectScroller(b, 'search');
    expect(b.first(job())?.params).toEqual({ page: 1 });
    expect(() => selectScroller(createScroller(options), 'nope')).toThrow(/Scroller 'nope' not set/);
    expect(() => createScroller({ method: 'multiple', scrollers: { a: { method: 'pagenum' } }, default: 'x' })).toThrow(/Default scroller 'x'/);
  });

  it('rejects an unknown method', () => {
    expect(() => createScroller({ method: 'zigzag' })).toThrow(/Unknown pagination method 'zigzag'/);
  });
});
