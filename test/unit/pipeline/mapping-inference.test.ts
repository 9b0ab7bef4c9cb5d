/**
 * The mapping proposed from sampled bodies (src/pipeline/inference/): the kind of each value,
 * the type a field's kinds add up to, which fields become columns and under which names, the
 * bounds (100 columns, 1000 fields), and, as properties over generated bodies, that every
 * proposal is a mapping the Stream API takes whose columns read every sampled value in a form
 * their data type accepts, and that no sampled value is left without a column.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JsonObject, lookupPath, parseJson, parsePath, type JsonValue } from '../../../src/pipeline/columns/index.js';
import { MappingSampler, MAX_COLUMNS, MAX_FIELDS, baseTypeOf, columnNameOf, kindOf, numberKind } from '../../../src/pipeline/inference/index.js';
import type { BaseType, Column } from '../../../src/model/definition.js';
import type { ValueKind } from '../../../src/contract/mapping-proposal.js';

const body = (value: unknown): JsonValue => parseJson(JSON.stringify(value));
const proposal = (...bodies: unknown[]) => {
  const sampler = new MappingSampler();
  for (const b of bodies) sampler.add(typeof b === 'string' ? parseJson(b) : body(b));
  return sampler.propose();
};
const pathColumns = (columns: Column[]) => columns.filter((c) => c.type === 'path');

describe('the kind of a value', () => {
  it('judges numbers by their text', () => {
    const cases: Array<[string, ValueKind]> = [
      ['0', 'integer'], ['-42', 'integer'], ['9223372036854775807', 'integer'], ['-9223372036854775808', 'integer'],
      ['9223372036854775808', 'decimal'], ['1.0', 'decimal'], ['-1.50', 'decimal'], ['0.123456789', 'decimal'],
      ['12345678901234567890123456789.5', 'decimal'],
      ['0.1234567891', 'float'], ['1.5e3', 'float'], ['1E-7', 'float'], ['123456789012345678901234567890', 'float'],
      ['1e400', 'hugeNumber'], ['-1e400', 'hugeNumber'],
    ];
    for (const [raw, kind] of cases) expect([raw, numberKind(raw)]).toEqual([raw, kind]);
  });

  it('tells dates and timestamps with a zone from other strings', () => {
    const cases: Array<[string, ValueKind]> = [
      ['2026-11-27', 'date'], ['2024-02-29', 'date'], ['0001-01-01', 'date'],
      ['2023-02-29', 'string'], ['2026-13-01', 'string'], ['2026-04-31', 'string'], ['0000-01-01', 'string'], ['2026-1-27', 'string'],
      ['2026-11-27T01:02:03Z', 'timestamp'], ['2026-11-27T01:02:03.456Z', 'timestamp'], ['2026-11-27T01:02:03.123456789+01:00', 'timestamp'],
      ['2026-11-27T23:59:59-11:30', 'timestamp'], ['0001-01-01T01:00:00+01:00', 'timestamp'], ['9999-12-31T22:59:59-01:00', 'timestamp'],
      // In UTC, the year 0000 or 10000: no TIMESTAMP can hold them.
      ['0001-01-01T00:30:00+01:00', 'string'], ['9999-12-31T23:30:00-01:00', 'string'],
      ['2026-11-27T01:02:03', 'string'], ['2026-11-27 01:02:03Z', 'string'], ['2026-11-27T24:00:00Z', 'string'],
      ['2026-11-27T01:02:60Z', 'string'], ['2026-11-27T01:02Z', 'string'], ['2026-11-27t01:02:03z', 'string'],
      ['2026-11-27T01:02:03+0100', 'string'], ['2026-02-30T01:02:03Z', 'string'],
      ['', 'string'], ['hello', 'string'], ['2026', 'string'],
    ];
    for (const [text, kind] of cases) expect([text, kindOf(text)]).toEqual([text, kind]);
  });

  it('names the other JSON values', () => {
    expect(kindOf(null)).toBe('null');
    expect(kindOf(true)).toBe('boolean');
    expect(kindOf(body({ a: 1 }))).toBe('object');
    expect(kindOf(body([1]))).toBe('array');
  });
});

describe('the type of a field', () => {
  it('adds the kinds up', () => {
    const cases: Array<[ValueKind[], BaseType]> = [
      [['integer'], 'INTEGER'], [['integer', 'null'], 'INTEGER'], [['integer', 'decimal'], 'NUMERIC'], [['decimal'], 'NUMERIC'],
      [['integer', 'decimal', 'float'], 'FLOAT'], [['float'], 'FLOAT'], [['hugeNumber'], 'STRING'], [['integer', 'hugeNumber'], 'STRING'],
      [['boolean'], 'BOOLEAN'], [['date'], 'DATE'], [['timestamp', 'null'], 'TIMESTAMP'], [['date', 'timestamp'], 'STRING'],
      [['object'], 'JSON'], [['array'], 'JSON'], [['object', 'array', 'null'], 'JSON'],
      [['string'], 'STRING'], [['string', 'integer'], 'STRING'], [['boolean', 'integer'], 'STRING'], [['object', 'string'], 'STRING'],
      [['null'], 'STRING'], [[], 'STRING'],
    ];
    for (const [kinds, type] of cases) expect([kinds, baseTypeOf(new Set(kinds))]).toEqual([kinds, type]);
  });
});

describe('a proposal', () => {
  it('has the receive time, then a typed path column per field in the order first seen', () => {
    const p = proposal(
      { id: 1, user: { name: 'ann', age: 31 }, price: 9.5, paid: true, day: '2026-11-27', at: '2026-11-27T01:02:03.456Z', tags: ['a'] },
      { id: 2, user: { name: 'bob', email: null }, price: 10, paid: false, day: '2026-11-28', at: '2026-11-28T01:02:03+01:00', tags: [], note: 'x' },
    );
    expect(p.columns).toEqual([
      { type: 'datetime', name: 'received_at', dataType: 'TIMESTAMP' },
      { type: 'path', name: 'id', path: 'id', dataType: 'INTEGER' },
      { type: 'path', name: 'user_name', path: 'user.name', dataType: 'STRING', rawString: true },
      { type: 'path', name: 'user_age', path: 'user.age', dataType: 'INTEGER' },
      { type: 'path', name: 'user_email', path: 'user.email', dataType: 'STRING' },
      { type: 'path', name: 'price', path: 'price', dataType: 'NUMERIC' },
      { type: 'path', name: 'paid', path: 'paid', dataType: 'BOOLEAN' },
      { type: 'path', name: 'day', path: 'day', dataType: 'DATE', rawString: true },
      { type: 'path', name: 'at', path: 'at', dataType: 'TIMESTAMP', rawString: true },
      { type: 'path', name: 'tags', path: 'tags', dataType: 'JSON' },
      { type: 'path', name: 'note', path: 'note', dataType: 'STRING', rawString: true },
    ]);
    expect(p.fields).toEqual([
      { path: 'id', seen: 2, types: { integer: 2 }, column: 'id' },
      { path: 'user', seen: 2, types: { object: 2 }, note: 'An object: its members are columns.' },
      { path: 'user.name', seen: 2, types: { string: 2 }, column: 'user_name' },
      { path: 'user.age', seen: 1, types: { integer: 1 }, column: 'user_age' },
      { path: 'user.email', seen: 1, types: { null: 1 }, column: 'user_email', note: 'Only null values seen: STRING until values show a type.' },
      { path: 'price', seen: 2, types: { integer: 1, decimal: 1 }, column: 'price' },
      { path: 'paid', seen: 2, types: { boolean: 2 }, column: 'paid' },
      { path: 'day', seen: 2, types: { date: 2 }, column: 'day' },
      { path: 'at', seen: 2, types: { timestamp: 2 }, column: 'at' },
      { path: 'tags', seen: 2, types: { array: 2 }, column: 'tags' },
      { path: 'note', seen: 1, types: { string: 1 }, column: 'note' },
    ]);
    expect(p.fieldsTruncated).toBe(false);
  });

  it('opens objects three levels deep; deeper objects, empty objects and arrays are JSON columns', () => {
    const p = proposal({ a: { b: { c: { d: 1 }, e: 2 } }, empty: {}, list: [{ x: 1 }] });
    expect(pathColumns(p.columns).map((c) => [c.path, c.dataType])).toEqual([['a.b.c', 'JSON'], ['a.b.e', 'INTEGER'], ['empty', 'JSON'], ['list', 'JSON']]);
    expect(p.fields.map((f) => f.path)).toEqual(['a', 'a.b', 'a.b.c', 'a.b.e', 'empty', 'list']);
  });

  it('keeps a field that is sometimes an object as one column, and says why its members have none', () => {
    const p = proposal({ meta: { v: 1 } }, { meta: 'none' }, { meta: null });
    expect(pathColumns(p.columns)).toEqual([{ type: 'path', name: 'meta', path: 'meta', dataType: 'STRING', rawString: true }]);
    expect(p.fields).toEqual([
      { path: 'meta', seen: 3, types: { null: 1, string: 1, object: 1 }, column: 'meta' },
      { path: 'meta.v', seen: 1, types: { integer: 1 }, note: 'Inside "meta", which is a column of its own (its values are not always objects).' },
    ]);
  });

  it('opens an object that is sometimes null', () => {
    const p = proposal({ geo: { lat: 50.1 } }, { geo: null });
    expect(pathColumns(p.columns).map((c) => c.path)).toEqual(['geo.lat']);
  });

  it('gives no column to keys a path cannot address, and an object of only such keys is a JSON column', () => {
    const p = proposal({ 'a.b': 1, 'x[0]': 2, '': 3, '7]': 4, ok: 5, only: { 'k.k': 1 } });
    expect(pathColumns(p.columns).map((c) => c.path)).toEqual(['ok', 'only']);
    expect(pathColumns(p.columns)[1].dataType).toBe('JSON');
    const note = 'A path cannot address this key (it is empty, or has "." or "["): a template column can read it.';
    expect(p.fields.filter((f) => f.note === note).map((f) => f.path)).toEqual(['a.b', 'x[0]', '', '7]', 'only.k.k']);
  });

  it('makes Storage column names: letters, digits and "_", at most 64, unique without regard to case', () => {
    expect(columnNameOf(['user', 'first-name'])).toBe('user_first_name');
    expect(columnNameOf(['Ünïcödé key'])).toBe('Unicode_key');
    expect(columnNameOf(['_id'])).toBe('id');
    expect(columnNameOf(['日本'])).toBe('field');
    expect(columnNameOf(['x'.repeat(70)])).toBe('x'.repeat(64));
    expect(columnNameOf(['a'.repeat(63), 'b'])).toBe('a'.repeat(63));

    const long = 'y'.repeat(70);
    const p = proposal({ user_name: 1, user: { name: 2 }, USER_NAME: 3, received_at: 4, _timestamp: 5, timestamp: 6, [long]: 7, [`${long}z`]: 8 });
    expect(p.columns.map((c) => c.name)).toEqual([
      'received_at', 'user_name', 'user_name_2', 'USER_NAME_3', 'received_at_2', 'timestamp', 'timestamp_2', 'y'.repeat(64), `${'y'.repeat(62)}_2`,
    ]);
  });

  it('keeps at most 100 columns: the fields seen in the most bodies', () => {
    const wide = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i]));
    const common = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i]).filter(([, i]) => (i as number) % 3 === 0));
    const p = proposal(wide, common);
    expect(p.columns).toHaveLength(MAX_COLUMNS);
    const names = pathColumns(p.columns).map((c) => c.name);
    // The 50 fields seen twice, then the first 49 of the others, in the order first seen.
    expect(names.filter((n) => Number(n.slice(1)) % 3 === 0)).toHaveLength(50);
    expect(names.slice(0, 4)).toEqual(['f0', 'f1', 'f2', 'f3']);
    expect(p.fields.find((f) => f.path === 'f149')).toEqual({ path: 'f149', seen: 1, types: { integer: 1 }, note: 'Left out: a mapping has at most 100 columns, and the fields seen in the most records were kept.' });
  });

  it('tracks at most 1000 distinct fields', () => {
    const sampler = new MappingSampler();
    for (let r = 0; r < 20; r++) sampler.add(body(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${r}_${i}`, i]))));
    const p = sampler.propose();
    expect(p.fields).toHaveLength(MAX_FIELDS);
    expect(p.fieldsTruncated).toBe(true);
  });

  it('takes only objects', () => {
    const sampler = new MappingSampler();
    for (const b of ['[1]', '"text"', '42', 'null']) expect(sampler.add(parseJson(b))).toBe(false);
    expect(sampler.add(parseJson('{"a":1}'))).toBe(true);
    expect(sampler.propose().columns.map((c) => c.name)).toEqual(['received_at', 'a']);
  });

  it('with no body: only the receive time', () => {
    expect(new MappingSampler().propose()).toEqual({ columns: [{ type: 'datetime', name: 'received_at', dataType: 'TIMESTAMP' }], fields: [], fieldsTruncated: false });
  });
});

// An independent oracle of what each data type accepts (the CSV text of the issue's contract).
const INT64 = [-(2n ** 63n), 2n ** 63n - 1n] as const;
function accepts(type: BaseType, value: JsonValue): boolean {
  const raw = typeof value === 'object' && value !== null && 'raw' in value ? (value as { raw: string }).raw : undefined;
  switch (type) {
    case 'INTEGER': return raw !== undefined && /^-?\d+$/.test(raw) && BigInt(raw) >= INT64[0] && BigInt(raw) <= INT64[1];
    case 'NUMERIC': return raw !== undefined && /^-?\d{1,29}(\.\d{1,9})?$/.test(raw);
    case 'FLOAT': return raw !== undefined && Number.isFinite(Number(raw));
    case 'BOOLEAN': return typeof value === 'boolean';
    case 'DATE': return typeof value === 'string' && /^\d{4}-\d\d-\d\d$/.test(value) && sameDay(value);
    case 'TIMESTAMP': return typeof value === 'string' && /^\d{4}-\d\d-\d\dT([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value)
      && sameDay(value.slice(0, 10)) && Number.isFinite(Date.parse(value)) && /^(?!0000)\d{4}-/.test(new Date(Date.parse(value)).toISOString());
    case 'JSON': return value instanceof JsonObject || Array.isArray(value);
    case 'STRING': return true;
  }
}
function sameDay(day: string): boolean {
  const t = Date.parse(`${day}T00:00:00Z`);
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === day && day >= '0001';
}

// Bodies with a few keys (so that fields repeat across bodies), nested objects and typed-looking strings.
const key = fc.constantFrom('id', 'name', 'user', 'at', 'day', 'n', 'tags', 'a.b', 'Ab', 'ab', 'x y', '_t', 'é', '0');
const text = fc.oneof(
  fc.string(),
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.constantFrom('2026-02-30', '2026-11-27T01:02:03+01:00', '2026-11-27T24:00:00Z', '2026-11-27T01:02:03', '0001-01-01T00:30:00+01:00', '9999-12-31T23:30:00-01:00'),
);
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('1.0', '1e400', '0.1234567891', '-0.5'),
);
const leaf = fc.oneof(fc.constant(null), fc.boolean(), text, numberText.map((n) => ({ __number: n })));
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, leaf, fc.array(tie('value'), { maxLength: 2 }), tie('object')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
})).value;
const bodies = fc.array(fc.dictionary(key, value, { maxKeys: 6 }), { minLength: 1, maxLength: 8 });

/** JSON text with the generated numbers written as given. */
function toJson(v: unknown): string {
  if (v !== null && typeof v === 'object' && '__number' in v) return (v as { __number: string }).__number;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`;
  return JSON.stringify(v);
}

describe('every proposal (properties)', () => {
  it('is a mapping the API takes, and each column reads every sampled value in a form its type accepts', () => {
    fc.assert(fc.property(bodies, (generated) => {
      const parsed = generated.map((b) => parseJson(toJson(b)));
      const sampler = new MappingSampler();
      for (const b of parsed) expect(sampler.add(b)).toBe(true);
      const { columns } = sampler.propose();
      expect(columns.length).toBeLessThanOrEqual(MAX_COLUMNS);
      const lower = columns.map((c) => c.name.toLowerCase());
      expect(new Set(lower).size).toBe(columns.length);
      for (const c of columns) {
        expect(c.name).toMatch(/^[A-Za-z0-9_]{1,64}$/);
        expect(c.name.toLowerCase()).not.toBe('_timestamp');
      }
      for (const c of pathColumns(columns)) {
        const steps = parsePath(c.path!);
        const found = parsed.map((b) => lookupPath(b, steps)).filter((v) => v !== undefined);
        expect(found.length).toBeGreaterThan(0);
        for (const v of found) {
          if (v !== null && !accepts(c.dataType!, v)) throw new Error(`column ${c.name} (${c.dataType}) cannot take ${JSON.stringify(v)}`);
        }
      }
    }), { numRuns: 300 });
  });

  it('leaves no sampled value without a column (under 100 fields): each value at an addressable path is read by its column or one around it', () => {
    fc.assert(fc.property(bodies, (generated) => {
      const parsed = generated.map((b) => parseJson(toJson(b)));
      const sampler = new MappingSampler();
      for (const b of parsed) sampler.add(b);
      const paths = pathColumns(sampler.propose().columns).map((c) => c.path!);
      const covered = (p: string) => paths.some((c) => p === c || p.startsWith(`${c}.`));
      const walk = (v: JsonValue, prefix: string[]): void => {
        if (!(v instanceof JsonObject)) return;
        v.keys.forEach((k, i) => {
          if (k === '' || /[.[]|^\d+\]$/.test(k)) return;
          const p = [...prefix, k];
          // An object's members are read by columns (an empty object has nothing to read).
          if (v.values[i] instanceof JsonObject) return walk(v.values[i], p);
          // A null is what the members' columns read when it stands for their object.
          if (v.values[i] === null && paths.some((c) => c.startsWith(`${p.join('.')}.`))) return;
          if (!covered(p.join('.'))) throw new Error(`no column reads "${p.join('.')}"`);
        });
      };
      for (const b of parsed) walk(b, []);
    }), { numRuns: 300 });
  });
});
