import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { JsonParser, JsonParserError } from '../src/output/json-parser.js';
import { LegacyJsonParser, legacySafeName } from '../src/output/legacy-json-parser.js';
import { tableCsv } from '../src/output/output.js';
import { phpFloatToString, phpJsonEncode, phpSerialize, type Json } from '../src/php.js';
import { chooseParser } from '../src/output/results.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

function legacyTables(pages: { data: Json[]; type: string; parent?: Record<string, Json> }[], warnings: string[] = []) {
  const p = new LegacyJsonParser({ warning: (m) => warnings.push(m) });
  for (const page of pages) p.process(page.data, page.type, page.parent ?? null);
  return Object.fromEntries(p.getTables().map((t) => [t.name, tableCsv(t)]));
}

describe('generic extractor: legacy JSON parser (compatLevel 1, php-jsonparser 2.x)', () => {
  it('lets a parent column overwrite the data column of its name; the duplicate header is md5(name) and stays empty (example 124)', () => {
    const out = legacyTables([
      {
        type: 'user-detail',
        data: [{ id: 123, name: 'John Doe', parent_id: 'admins', address: { city: 'London', country: 'UK' } }],
        parent: { parent_id: 123 },
      },
    ]);
    expect(out['user-detail']).toBe(
      `"id","name","parent_id","address_city","address_country","${md5('parent_id')}"\n"123","John Doe","123","London","UK",""\n`,
    );
    expect(md5('parent_id')).toBe('6be379826b20cc58475f636e33f4606b');
  });

  it('treats userData columns the same way, keeping their order (example 125)', () => {
    const out = legacyTables([{ type: 'users', data: [{ id: 1, tag: 'CFO' }], parent: { tag: 'development', price: '$10' } }]);
    expect(out.users).toBe(`"id","tag","e4d23e841d8e8804190027bce3180fa5","price"\n"1","development","","$10"\n`);
  });

  it('names tables and columns per character, without collapsing runs of _', () => {
    expect(legacySafeName('user/{user-id}')).toBe('user__user-id');
    expect(legacySafeName('_id')).toBe('id');
    expect(legacySafeName('a__b.c')).toBe('a__b_c');
    const out = legacyTables([{ type: 'user/{user-id}', data: [{ 'a__b': 1, 'home.city': 'P' }] }]);
    expect(out['user__user-id']).toBe('"a__b","home_city"\n"1","P"\n');
    // The current parser collapses the runs instead.
    const current = new JsonParser();
    current.process([{ a__b: 1 }], 'user/{user-id}', null);
    expect(current.getTables().map((t) => [t.name, t.header])).toEqual([['user_user-id', ['a_b']]]);
  });

  it('shortens names longer than 64 characters like createSafeName', () => {
    const long = 'x'.repeat(70);
    expect(legacySafeName(long)).toBe(`${md5(long)}`);
    const words = `first second third ${'y'.repeat(60)}_tail`;
    expect(legacySafeName(words)).toBe('fsty__tail');
  });

  it('links child tables by <type>_md5(serialize(row)), nested types keep their dots', () => {
    const out = legacyTables([{ type: 'users', data: [{ id: 123, name: 'John Doe', tags: ['active', 'admin'], orders: [{ oid: 5, items: [{ sku: 's' }] }] }] }]);
    const row = { id: 123, name: 'John Doe', tags: ['active', 'admin'], orders: [{ oid: 5, items: [{ sku: 's' }] }] };
    const id = `users_${md5(phpSerialize(row))}`;
    expect(out.users).toBe(`"id","name","tags","orders"\n"123","John Doe","${id}","${id}"\n`);
    expect(out.users_tags).toBe(`"data","JSON_parentId"\n"active","${id}"\n"admin","${id}"\n`);
    const orderId = `users.orders_${md5(phpSerialize({ oid: 5, items: [{ sku: 's' }], JSON_parentId: id }))}`;
    expect(out.users_orders).toBe(`"oid","items","JSON_parentId"\n"5","${orderId}","${id}"\n`);
    expect(out.users_orders_items).toBe(`"sku","JSON_parentId"\n"s","${orderId}"\n`);
  });

  it('hashes floats with PHP default serialize_precision (-1), not 17', () => {
    const out = legacyTables([{ type: 't', data: [{ v: 0.1, a: [1] }] }]);
    const id = `t_${md5('O:8:"stdClass":2:{s:1:"v";d:0.1;s:1:"a";a:1:{i:0;i:1;}}')}`;
    expect(out.t).toBe(`"v","a"\n"0.1","${id}"\n`);
  });

  it('upgrades a scalar to a one-item child table, skips empty objects, encodes nested arrays', () => {
    const warnings: string[] = [];
    const out = legacyTables(
      [
        {
          type: 't',
          data: [
            { id: 1, tags: ['x'], empty: {}, n: null, m: [[1, 2]] },
            { id: 2, tags: 'y', n: null },
          ],
        },
      ],
      warnings,
    );
    const lines = out.t.split('\n');
    expect(lines[0]).toBe('"id","tags","n","m"');
    expect(out.t_tags.split('\n').slice(1, 3).map((l) => l.split(',')[0])).toEqual(['"x"', '"y"']);
    expect(out.t_m.split('\n')[1].startsWith('"[1,2]"')).toBe(true);
    expect(warnings).toContain("Unsupported array nesting in 't.m'! Converting to JSON string.");
  });

  it('appends columns first seen on later pages after the known ones', () => {
    const out = legacyTables([
      { type: 'users', data: [{ id: 1, a: { x: 1 } }] },
      { type: 'users', data: [{ id: 2, b: 2, a: { y: 3 } }] },
    ]);
    expect(out.users).toBe('"id","a_x","a_y","b"\n"1","1","",""\n"2","","3","2"\n');
  });

  it('rejects incompatible types and reports no data for an unknown empty page', () => {
    const p = new LegacyJsonParser();
    expect(p.process([], 'x', null)).toBe(false);
    expect(p.process([null], 'x', null)).toBe(false);
    expect(() => p.process([{ a: 1 }, { a: { b: 1 } }], 'y', null)).toThrow(JsonParserError);
    expect(() => new LegacyJsonParser().process([{ a: 1 }, { a: { b: 1 } }], 'y', null)).toThrow(
      `Unhandled type change from "scalar" to "object" in 'y.a'`,
    );
    expect(() => new LegacyJsonParser().process([{ a: [1] }, { a: [{ b: 1 }] }], 'y', null)).toThrow(
      "Data array in 'y.a' contains incompatible data types 'scalar' and 'object'!",
    );
  });

  it('dumps and loads its structure (state version 2)', () => {
    const p = new LegacyJsonParser();
    p.process([{ id: 1, tags: ['a'] }], 'users', null);
    const dumped = p.dump();
    expect(dumped).toEqual({ 'users.tags': { data: 'scalar' }, users: { id: 'scalar', tags: 'arrayOfscalar' } });
    const q = new LegacyJsonParser();
    q.load({ users: { previous: 'scalar', id: 'scalar' } });
    q.process([{ id: 2 }], 'users', null);
    expect(q.getTables()[0].header).toEqual(['previous', 'id']);
    expect(() => new LegacyJsonParser().load({ users: { id: 'nope' } })).toThrow(/not a valid data type/);
  });

  it('is chosen for compatLevel <= 1 or a version-2 state; a version-3 state wins over compatLevel', () => {
    const warnings: string[] = [];
    const log = { warning: (m: string) => warnings.push(m) };
    expect(chooseParser(1, undefined, log).structVersion).toBe(2);
    expect(chooseParser(1, undefined, log).parser).toBeInstanceOf(LegacyJsonParser);
    expect(chooseParser(2, undefined, log).parser).toBeInstanceOf(JsonParser);
    expect(chooseParser(3, { version: 2, struct: { users: { id: 'scalar' } } }, log).structVersion).toBe(2);
    expect(chooseParser(1, { version: 3, struct: { data: {} } }, log).structVersion).toBe(3);
    expect(warnings).toContain('Ignored request for legacy JSON parser, because configuration is already upgraded.');
  });
});

describe('generic extractor: PHP default serialize_precision (-1)', () => {
  it('prints the shortest round-trip digits with precision-17 layout', () => {
    expect(phpFloatToString(0.1, -1)).toBe('0.1');
    expect(phpFloatToString(0.1, 17)).toBe('0.10000000000000001');
    expect(phpFloatToString(1.5e-7, -1)).toBe('1.5E-7');
    expect(phpFloatToString(1e20 + 0.5, -1)).toBe('1.0E+20');
    expect(phpFloatToString(123.456, -1)).toBe('123.456');
    expect(phpJsonEncode([0.1, { a: 2.5 }], -1)).toBe('[0.1,{"a":2.5}]');
    expect(phpSerialize({ v: 0.1 }, -1)).toBe('O:8:"stdClass":1:{s:1:"v";d:0.1;}');
  });
});
