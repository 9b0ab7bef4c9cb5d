import { describe, expect, it } from 'vitest';
import { csvCell, httpBuildQuery, phpBool, phpFloatToString, phpJsonEncode, phpSerialize } from '../src/php.js';
import { buildUrl, prepareRequest } from '../src/http/request.js';
import { getDataFromPath, locateData, parseDataField } from '../src/response/data-path.js';
import { applyResponseFilter } from '../src/response/response-filter.js';
import { compileRecursionFilter } from '../src/child-jobs/recursion-filter.js';
import { decodeJson, maskSecrets, maskSensitiveParams, retryAfterMs } from '../src/http/http-client.js';

describe('generic extractor: PHP semantics', () => {
  it('converts to boolean like PHP (bool)', () => {
    for (const v of [false, 0, 0.0, '', '0', null, []]) expect(phpBool(v)).toBe(false);
    for (const v of ['no', 'false', '0.0', {}, [0], 1, true]) expect(phpBool(v)).toBe(true);
  });

  it('serialises like PHP serialize() with stdClass objects', () => {
    expect(phpSerialize({ id: 123, name: 'John Doe', tags: ['active', 'admin'] })).toBe(
      'O:8:"stdClass":3:{s:2:"id";i:123;s:4:"name";s:8:"John Doe";s:4:"tags";a:2:{i:0;s:6:"active";i:1;s:5:"admin";}}',
    );
    expect(phpSerialize([null, true, 0.1, 'č'])).toBe('a:4:{i:0;N;i:1;b:1;i:2;d:0.10000000000000001;i:3;s:2:"č";}');
  });

  it('encodes JSON like PHP json_encode()', () => {
    expect(phpJsonEncode({ url: 'a/b', s: 'č', n: [1, 0.5] })).toBe('{"url":"a\\/b","s":"\\u010d","n":[1,0.5]}');
  });

  it('formats floats with PHP precision', () => {
    expect(phpFloatToString(0.1, 17)).toBe('0.10000000000000001');
    expect(phpFloatToString(1e20, 14)).toBe('1.0E+20');
    expect(csvCell(3.14159265358979)).toBe('3.1415926535898');
    expect(csvCell(true)).toBe('1');
  });

  it('builds query strings like http_build_query', () => {
    expect(httpBuildQuery({ filter: { field: 'type' }, d: '2017-04-19 12:46:46', b: true, n: null })).toBe(
      'filter%5Bfield%5D=type&d=2017-04-19+12%3A46%3A46&b=1',
    );
  });

  it('merges params over the endpoint query, endpoint keys first', () => {
    expect(buildUrl('users?page=2', { account: 123 })).toBe('users?page=2&account=123');
    expect(buildUrl('users?page=2&x=1', { page: 3 })).toBe('users?page=3&x=1');
    expect(buildUrl('users?a=%20', {})).toBe('users?a=%20');
  });

  it('sends POST params as a JSON body, `[]` when empty, and resolves against baseUrl', () => {
    const defaults = { baseUrl: 'http://h/api/', defaultParams: {}, headers: {}, authQuery: {} };
    expect(prepareRequest({ endpoint: 'getUsers', params: {}, method: 'POST' }, defaults)).toMatchObject({
      url: 'http://h/api/getUsers',
      method: 'POST',
      body: '[]',
    });
    expect(prepareRequest({ endpoint: '/other', params: { a: 1 }, method: 'GET' }, { ...defaults, defaultParams: { acc: 1 } }).url).toBe(
      'http://h/other?acc=1&a=1',
    );
  });

  it('locates data by dataField or auto-detection', () => {
    expect(getDataFromPath('members.0.items', { members: [{ items: [1] }] })).toEqual([1]);
    expect(locateData({ a: { b: [1, 2] } }, parseDataField('a.b'), 'e').data).toEqual([1, 2]);
    expect(locateData({ a: { b: { x: 1 } } }, parseDataField('a.b'), 'e').data).toEqual([{ x: 1 }]);
    expect(locateData({ d: { 'x.y': [1] } }, parseDataField({ path: 'd|x.y', delimiter: '|' }), 'e').data).toEqual([1]);
    expect(locateData({ n: 1, items: [3] }, null, 'e').data).toEqual([3]);
    expect(locateData({ a: {} }, parseDataField('missing'), 'e').warning).toBe("dataField 'missing' contains no data!");
    expect(() => locateData({ a: [], b: [] }, null, 'e')).toThrow(/More than one array found/);
    expect(() => locateData('text', null, 'e')).toThrow(/Unknown response/);
  });

  it('JSON-encodes filtered values (compatLevel 3 also scalars)', () => {
    expect(applyResponseFilter([{ c: 'green', t: { a: [1] } }], ['c', 't.a'], '.', 3)).toEqual([{ c: '"green"', t: { a: '[1]' } }]);
    expect(applyResponseFilter([{ c: 'green' }], ['c'], '.', 2)).toEqual([{ c: 'green' }]);
    expect(applyResponseFilter([{ l: [{ p: { x: 1 } }] }], ['l[].p'], '.', 3)).toEqual([{ l: [{ p: '{"x":1}' }] }]);
  });

  it('evaluates recursion filters with & before |', () => {
    const f = compileRecursionFilter('role==parent|id>300&id<400');
    expect(f({ role: 'parent', id: 1 })).toBe(true);
    expect(f({ role: 'child', id: 350 })).toBe(true);
    expect(f({ role: 'child', id: 450 })).toBe(false);
    expect(compileRecursionFilter('type!~%min%')({ type: 'admin' })).toBe(false);
    expect(() => compileRecursionFilter('nonsense')).toThrow(/Operator couldn't be determined/);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs('Thu, 01 Jan 1970 00:00:10 GMT', 4000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(undefined)).toBeNull();
  });

  it('masks secrets and secret-looking parameters in debug lines', () => {
    expect(maskSecrets('GET /x?t=abc123 Basic YWJjMTIz', ['abc123', 'YWJjMTIz'])).toBe('GET /x?t=***** Basic *****');
    expect(maskSensitiveParams('GET /x?apiToken=1&page=2 body {"password":"p"} a=1&client_secret=s')).toBe(
      'GET /x?apiToken=*****&page=2 body {"password":"*****"} a=1&client_secret=*****',
    );
  });

  it('names the request and the content type of a body that is not JSON', () => {
    expect(() => decodeJson('<html>', 'text/html', 'GET http://x/users')).toThrow(/Invalid JSON response from API \(Content-Type: text\/html\) for GET http:\/\/x\/users/);
    expect(() => decodeJson('', 'application/json', 'GET u')).toThrow(/empty body/);
    expect(decodeJson('[1]', undefined, 'GET u')).toEqual([1]);
  });
});
