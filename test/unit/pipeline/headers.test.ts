import { describe, expect, it } from 'vitest';
import {
  TEST_ENDPOINT_OMITTED_HEADERS,
  canonicalHeaderKey,
  headerStr,
  headersFromIncoming,
  headersFromRaw,
  headersJson,
  sortedHeaderEntries,
} from '../../../src/pipeline/headers.js';

describe('canonicalHeaderKey (Go http.CanonicalHeaderKey)', () => {
  it.each([
    ['content-type', 'Content-Type'],
    ['CONTENT-TYPE', 'Content-Type'],
    ['x-forwarded-for', 'X-Forwarded-For'],
    ['X-StorageApi-Token', 'X-Storageapi-Token'],
    ['accept', 'Accept'],
    ['www-authenticate', 'Www-Authenticate'],
    ['foo_bar', 'Foo_bar'],
    ['-x', '-X'],
    ['a--b', 'A--B'],
    ['x-1a', 'X-1a'],
  ])('%s -> %s', (input, expected) => {
    expect(canonicalHeaderKey(input)).toBe(expected);
  });

  it('leaves names with non-token characters unchanged', () => {
    expect(canonicalHeaderKey('user agent')).toBe('user agent');
    expect(canonicalHeaderKey('über-header')).toBe('über-header');
    expect(canonicalHeaderKey('a:b')).toBe('a:b');
  });
});

describe('header maps from Node requests', () => {
  it('rawHeaders: canonical names, first value of a repeated header', () => {
    const h = headersFromRaw(['x-custom', 'one', 'Content-Type', 'application/json', 'X-CUSTOM', 'two']);
    expect({ ...h }).toEqual({ 'X-Custom': 'one', 'Content-Type': 'application/json' });
  });

  it('rawHeaders: omits the test endpoint headers (Host, Storage API token)', () => {
    const h = headersFromRaw(
      ['Host', 'localhost', 'X-StorageApi-Token', 'secret', 'Accept', '*/*'],
      TEST_ENDPOINT_OMITTED_HEADERS,
    );
    expect({ ...h }).toEqual({ Accept: '*/*' });
  });

  it('rawHeaders: UTF-8 bytes that Node decoded as latin1 are restored', () => {
    const latin1 = Buffer.from('Žluťoučký', 'utf8').toString('latin1');
    expect(headersFromRaw(['X-Name', latin1])['X-Name']).toBe('Žluťoučký');
  });

  it('a header named __proto__ is kept as a header', () => {
    const h = headersFromRaw(['__proto__', 'x']);
    expect(Object.keys(h)).toEqual(['__proto__']);
    expect(h['__proto__']).toBe('x');
  });

  it('IncomingHttpHeaders: first element of array values, canonical names, omissions', () => {
    const h = headersFromIncoming(
      { 'set-cookie': ['a=1', 'b=2'], 'content-type': 'text/plain', host: 'example.com', 'x-empty': undefined },
      TEST_ENDPOINT_OMITTED_HEADERS,
    );
    expect({ ...h }).toEqual({ 'Set-Cookie': 'a=1', 'Content-Type': 'text/plain' });
  });
});

describe('header renderings', () => {
  it('entries are canonicalised and sorted; the first of clashing keys wins', () => {
    expect(sortedHeaderEntries({ 'x-b': '2', 'X-A': '1', 'X-B': '3' })).toEqual([
      ['X-A', '1'],
      ['X-B', '2'],
    ]);
  });

  it('the headers column of the conformance fixture (source/test-mapping/006)', () => {
    // The request as Go's resty client sends it; the test endpoint drops Host and the token.
    const raw = [
      'Host', 'localhost:8001',
      'User-Agent', 'go-resty/2.16.5 (https://github.com/go-resty/resty)',
      'Content-Length', '31',
      'Accept', 'application/json',
      'Content-Type', 'application/json',
      'X-Storageapi-Token', 'secret',
      'Accept-Encoding', 'gzip',
    ];
    const json = headersJson(sortedHeaderEntries(headersFromRaw(raw, TEST_ENDPOINT_OMITTED_HEADERS)));
    expect(json).toBe(
      '{"Accept":"application/json","Accept-Encoding":"gzip","Content-Length":"31","Content-Type":"application/json",' +
        '"User-Agent":"go-resty/2.16.5 (https://github.com/go-resty/resty)"}',
    );
  });

  it('headers JSON escapes like Go encoding/json (<, >, & and quotes)', () => {
    expect(headersJson([['X-A', '<a href="x">&</a>']])).toBe('{"X-A":"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e"}');
    expect(headersJson([])).toBe('{}');
  });

  it('HeaderStr: one "Name: value" line per header, lines sorted as strings', () => {
    // "A-B: ..." sorts before "A: ..." because "-" < ":" (the reference sorts lines, not names).
    const entries = sortedHeaderEntries({ A: 'x', 'A-B': 'y', Accept: '*/*' });
    expect(headerStr(entries)).toBe('A-B: y\nA: x\nAccept: */*\n');
    expect(headerStr([])).toBe('');
  });
});
