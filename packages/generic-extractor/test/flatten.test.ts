import { describe, expect, it } from 'vitest';
import { JsonParser, JsonParserError, safeName } from '../src/output/json-parser.js';
import { csvLine, manifestJson, outputFileName, tableCsv } from '../src/output/output.js';
import type { Json } from '../src/php.js';

function tables(pages: { data: Json[]; type: string; parent?: Record<string, Json> }[]) {
  const p = new JsonParser();
  for (const page of pages) p.process(page.data, page.type, page.parent ?? null);
  return Object.fromEntries(p.getTables().map((t) => [t.name, tableCsv(t)]));
}

describe('generic extractor: JSON to CSV flattening', () => {
  it('writes scalars as columns, booleans as 1/empty, every field quoted', () => {
    const out = tables([{ type: 'users', data: [{ id: 123, name: 'John "JD" Doe', married: true }, { id: 234, name: 'Jane', married: false }] }]);
    expect(out.users).toBe('"id","name","married"\n"123","John ""JD"" Doe","1"\n"234","Jane",""\n');
  });

  it('flattens nested objects into the row with sanitised names', () => {
    const out = tables([{ type: 'users', data: [{ id: 1, 'user-info': { id: 7, 'home.city': 'Prague' } }] }]);
    expect(out.users).toBe('"id","user-info_id","user-info_home_city"\n"1","7","Prague"\n');
  });

  it('puts arrays into child tables linked by the md5 of the PHP-serialised row (example 010)', () => {
    const out = tables([{ type: 'users', data: [{ id: 123, name: 'John Doe', tags: ['active', 'admin'] }] }]);
    const id = 'users_3ca896f39b257a4f2d2f4784e7680c87';
    expect(out.users).toBe(`"id","name","tags"\n"123","John Doe","${id}"\n`);
    expect(out.users_tags).toBe(`"data","JSON_parentId"\n"active","${id}"\n"admin","${id}"\n`);
  });

  it('makes the header the union of all pages, in first-seen order', () => {
    const out = tables([
      { type: 'users', data: [{ id: 1, a: { x: 1 } }] },
      { type: 'users', data: [{ id: 2, b: 2, a: { y: 3 } }] },
    ]);
    expect(out.users).toBe('"id","a_x","a_y","b"\n"1","1","",""\n"2","","3","2"\n');
  });

  it('leaves empty arrays, empty objects and null as empty cells without child rows', () => {
    const out = tables([{ type: 't', data: [{ id: 1, arr: ['x'], obj: { k: 1 } }, { id: 2, arr: [], obj: null }] }]);
    expect(out.t.split('\n')[2]).toBe('"2","",""');
    expect(out.t_arr.split('\n').length).toBe(3);
  });

  it('upgrades a scalar that later is an array into a child table', () => {
    const out = tables([{ type: 't', data: [{ id: 1, v: 'a' }, { id: 2, v: ['b', 'c'] }] }]);
    expect(out.t_v.split('\n').filter(Boolean)).toHaveLength(4);
    expect(out.t_v).toContain('"a","t_');
  });

  it('rejects an object where a scalar was seen', () => {
    const p = new JsonParser();
    expect(() => p.process([{ c: 'green' }, { c: { items: [] } }], 't')).toThrow(JsonParserError);
  });

  it('appends parent columns last and renames one that clashes with a data column (example 025)', () => {
    const out = tables([{ type: 'detail', data: [{ id: 1, parent_id: 'admins' }], parent: { parent_id: 123 } }]);
    expect(out.detail).toBe('"id","parent_id","parent_id_u0"\n"1","admins","123"\n');
  });

  it('writes scalar items into a data column and nested arrays as JSON (example 130)', () => {
    const out = tables([{ type: 'rows', data: [['a', 1], ['b', 2]] }]);
    expect(out.rows).toBe('"data"\n"[""a"",1]"\n"[""b"",2]"\n');
  });

  it('ignores an empty page (no table)', () => {
    const p = new JsonParser();
    expect(p.process([], 'users')).toBe(false);
    expect(p.process([null], 'users')).toBe(false);
    expect(p.getTables()).toEqual([]);
  });

  it('names tables and columns like the reference', () => {
    expect(safeName('user/{user-id}')).toBe('user_user-id');
    expect(safeName('_id')).toBe('id');
    expect(safeName('a__b.c')).toBe('a_b_c');
  });

  it('formats output files and manifests', () => {
    expect(csvLine([1, null, 'x'])).toBe('"1","","x"\n');
    expect(outputFileName('mock-server', 'users')).toBe('mock-server.users.csv');
    expect(manifestJson('mock-server', 'users', false)).toBe('{"destination":"in.c-mock-server.users","incremental":false}');
    expect(manifestJson('', 'rows', true)).toBe('{"incremental":true}');
  });
});
