import { describe, expect, it } from 'vitest';
import { createScroller } from '../src/pagination/pagination.js';
import type { Json } from '../src/php.js';
import type { JobRequestConfig } from '../src/http/request.js';
import { ForceStop, parseDurationSeconds } from '../src/pagination/stop-conditions.js';
import { NoScroller } from '../src/pagination/scrollers.js';
import { sameResponse } from '../src/runner.js';

const job = (): JobRequestConfig => ({ endpoint: 'users', params: {}, method: 'GET', id: 'j' });
const items = (n: number): Json[] => Array.from({ length: n }, (_, i) => ({ id: i }));

function stopReason(options: Record<string, Json>, response: Json, data: Json[]): string | null {
  const s = createScroller(options);
  let reason: string | null = null;
  s.onStop = (r) => (reason = r);
  s.first(job());
  const next = s.next(job(), response, data);
  return next === null ? reason : null;
}

describe('generic extractor: stop conditions and their order', () => {
  it('checks limitStop first, then forceStop, then nextPageFlag, then the method', () => {
    const all = { method: 'offset', limit: 2, limitStop: { count: 1 }, forceStop: { pages: 1 }, nextPageFlag: { field: 'more', stopOn: false } };
    expect(stopReason(all, { more: false }, items(1))).toMatch(/^Limit reached/);
    const { limitStop: _l, ...noLimit } = all;
    expect(stopReason(noLimit, { more: false }, items(1))).toMatch(/page limit reached/);
    const { forceStop: _f, ...onlyFlag } = noLimit;
    expect(stopReason(onlyFlag, { more: false }, items(1))).toMatch(/'more' is 'false'/);
    expect(stopReason({ method: 'offset', limit: 2 }, {}, items(1))).toMatch(/smaller than limit/);
  });

  it('nextPageFlag converts like PHP (bool): "no" is true; a missing field falls back to ifNotSet (default stopOn)', () => {
    const flag = (stopOn: boolean, ifNotSet?: boolean) => ({ method: 'offset', limit: 1, nextPageFlag: { field: 'hasMore', stopOn, ...(ifNotSet === undefined ? {} : { ifNotSet }) } });
    expect(stopReason(flag(true, false), { hasMore: 'no' }, items(1))).not.toBeNull();
    expect(stopReason(flag(false), { hasMore: 0 }, items(1))).not.toBeNull();
    expect(stopReason(flag(false), { hasMore: '0.0' }, items(1))).toBeNull();
    expect(stopReason(flag(false), {}, items(1))).not.toBeNull();
    expect(stopReason(flag(true, false), {}, items(1))).toBeNull();
    expect(stopReason(flag(true, false), [1, 2], items(1))).toBeNull();
    expect(() => createScroller({ method: 'offset', limit: 1, nextPageFlag: { field: 'x', stopOn: 'yes' } })).toThrow(/boolean/);
  });

  it('forceStop.pages requests exactly that many pages; volume counts json_encode bytes with >', () => {
    const s = createScroller({ method: 'offset', limit: 2, forceStop: { pages: 2, volume: 69 } });
    s.first(job());
    const page = { a: 'x'.repeat(61) }; // {"a":"…"} = 69 bytes
    expect(s.next(job(), page, items(2))).not.toBeNull();
    expect(s.next(job(), page, items(2))).toBeNull();
    const v = createScroller({ method: 'offset', limit: 2, forceStop: { volume: 100 } });
    v.first(job());
    expect(v.next(job(), page, items(2))).not.toBeNull();
    expect(v.next(job(), page, items(2))).toBeNull();
  });

  it('forceStop.time stops once the time is up', () => {
    let now = 0;
    const s = new ForceStop(new NoScroller(), { time: '1 minute' }, () => now);
    s.first(job());
    now = 59_000;
    let stopped = '';
    s.onStop = (r) => (stopped = r);
    s.next(job(), {}, []);
    expect(stopped).toBe('');
    now = 60_000;
    expect(s.next(job(), {}, [])).toBeNull();
    expect(stopped).toMatch(/time limit reached \(60 seconds\)/);
    expect(parseDurationSeconds('2 hours')).toBe(7200);
  });

  it('limitStop keeps the last page whole and stops after the first page when the field is missing', () => {
    const s = createScroller({ method: 'pagenum', limitStop: { count: 3 } });
    s.first(job());
    expect(s.next(job(), {}, items(2))).not.toBeNull();
    expect(s.next(job(), {}, items(2))).toBeNull();
    expect(stopReason({ method: 'pagenum', limitStop: { field: 'paginator.total' } }, { items: [] }, items(2))).toMatch(/not found/);
    expect(stopReason({ method: 'pagenum', limitStop: { field: 'total' } }, { total: '6' }, items(2))).toBeNull();
    expect(() => createScroller({ method: 'pagenum', limitStop: { count: 1, field: 'x' } })).toThrow(/only one/);
    expect(() => createScroller({ method: 'pagenum', limitStop: {} })).toThrow(/required/);
  });

  it('a cloned and reset scroller starts from scratch (child jobs)', () => {
    const s = createScroller({ method: 'offset', limit: 1, forceStop: { pages: 2 } });
    s.first(job());
    s.next(job(), {}, items(1));
    const c = s.clone();
    c.reset();
    expect(c.first(job())?.params).toEqual({ limit: 1, offset: 0 });
    expect(c.next(job(), {}, items(1))).not.toBeNull();
  });

  it('sees a page equal to the previous one only when values and key order are equal (check 0)', () => {
    expect(sameResponse({ a: [1, { b: 'x' }], c: null }, { a: [1, { b: 'x' }], c: null })).toBe(true);
    expect(sameResponse({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameResponse({ items: [1], page: 1 }, { items: [1], page: 2 })).toBe(false);
    expect(sameResponse([1, 2], [1, 2, 3])).toBe(false);
    expect(sameResponse(undefined, {})).toBe(false);
  });
});
