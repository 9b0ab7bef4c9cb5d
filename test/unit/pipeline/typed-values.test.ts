import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BaseType } from '../../../src/model/definition.js';
import { MappingError, parseJson, stringifyJson } from '../../../src/pipeline/columns/index.js';
import { converterFor } from '../../../src/pipeline/columns/typed-values.js';
import { parseDecimal, plainDecimalText } from '../../../src/pipeline/columns/decimal-text.js';

/** The column text of a body value given as JSON text. */
const convert = (type: BaseType, json: string) => converterFor(type)(parseJson(json));

function failure(type: BaseType, json: string): MappingError {
  try {
    convert(type, json);
  } catch (e) {
    expect(e).toBeInstanceOf(MappingError);
    return e as MappingError;
  }
  throw new Error(`${json} converted to ${type}`);
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

describe('typed values: what each type accepts, and its text', () => {
  it.each<[BaseType, string, string | null]>([
    ['STRING', '"héllo, \\"you\\""', 'héllo, "you"'],
    ['STRING', '""', ''],
    ['STRING', '12.50', '12.50'],
    ['STRING', 'true', 'true'],
    ['STRING', '{"b":1,"a":[1,"x"]}', '{"b":1,"a":[1,"x"]}'],
    ['INTEGER', '42', '42'],
    ['INTEGER', '-7', '-7'],
    ['INTEGER', '"007"', '7'],
    ['INTEGER', '"+12"', '12'],
    ['INTEGER', '1e3', '1000'],
    ['INTEGER', '2.000', '2'],
    ['INTEGER', '-0', '0'],
    ['INTEGER', '9223372036854775807', '9223372036854775807'],
    ['INTEGER', '"-9223372036854775808"', '-9223372036854775808'],
    ['NUMERIC', '-1.50', '-1.5'],
    ['NUMERIC', '"12345678901234567890.123456789"', '12345678901234567890.123456789'],
    ['NUMERIC', '1.5e-7', '0.00000015'],
    ['NUMERIC', '1e20', '100000000000000000000'],
    ['NUMERIC', '0.1234567895', '0.12345679'],
    ['NUMERIC', '-0.0000000005', '-0.000000001'],
    ['NUMERIC', '0.0000000004', '0'],
    ['NUMERIC', '99999999999999999999999999999.9999999994', '99999999999999999999999999999.999999999'],
    ['FLOAT', '1.5', '1.5'],
    ['FLOAT', '"1.5e-7"', '1.5e-7'],
    ['FLOAT', '0.1', '0.1'],
    ['FLOAT', '12345678901234567890', '12345678901234567000'],
    ['FLOAT', '-0', '0'],
    ['BOOLEAN', 'true', 'true'],
    ['BOOLEAN', '"false"', 'false'],
    ['DATE', '"2026-11-27"', '2026-11-27'],
    ['DATE', '"2024-02-29"', '2024-02-29'],
    ['DATE', '"0001-01-01"', '0001-01-01'],
    ['TIMESTAMP', '"2026-11-27T01:02:03Z"', '2026-11-27T01:02:03.000Z'],
    ['TIMESTAMP', '"2026-11-27T01:02:03.456789+01:00"', '2026-11-27T00:02:03.456789Z'],
    ['TIMESTAMP', '"2026-11-27 01:02-0530"', '2026-11-27T06:32:00.000Z'],
    ['TIMESTAMP', '"2026-11-27T01:02:03.123456789Z"', '2026-11-27T01:02:03.123456Z'],
    ['TIMESTAMP', '"2026-01-01T00:30:00+01"', '2025-12-31T23:30:00.000Z'],
    ['TIMESTAMP', '1764205323', '2025-11-27T01:02:03.000Z'],
    ['TIMESTAMP', '1764205323.25', '2025-11-27T01:02:03.250Z'],
    ['TIMESTAMP', '1764205323.000001', '2025-11-27T01:02:03.000001Z'],
    ['TIMESTAMP', '-0.5', '1969-12-31T23:59:59.500Z'],
    ['TIMESTAMP', '-0.0000001', '1969-12-31T23:59:59.999999Z'],
    ['JSON', '{"a" : [1, 2.50, "x"], "b": null}', '{"a":[1,2.50,"x"],"b":null}'],
    ['JSON', '"text"', '"text"'],
    ['JSON', '7', '7'],
  ])('%s from %s: %j', (type, json, text) => {
    expect(convert(type, json)).toBe(text);
  });

  it.each<BaseType>(['STRING', 'INTEGER', 'NUMERIC', 'FLOAT', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'JSON'])('a JSON null is NULL in %s', (type) => {
    expect(convert(type, 'null')).toBeNull();
  });

  it.each<[BaseType, string]>([
    ['INTEGER', '"abc"'],
    ['INTEGER', '1.5'],
    ['INTEGER', '9223372036854775808'],
    ['INTEGER', '"-9223372036854775809"'],
    ['INTEGER', '1e400'],
    ['INTEGER', 'true'],
    ['INTEGER', '""'],
    ['INTEGER', '" 1"'],
    ['INTEGER', '"0x10"'],
    ['INTEGER', '[1]'],
    ['NUMERIC', '{"a":1}'],
    ['NUMERIC', '"1,5"'],
    ['NUMERIC', '1e29'],
    ['NUMERIC', '"NaN"'],
    ['NUMERIC', '99999999999999999999999999999.9999999995'],
    ['FLOAT', '"Infinity"'],
    ['FLOAT', '"NaN"'],
    ['FLOAT', '1e400'],
    ['FLOAT', 'false'],
    ['BOOLEAN', '1'],
    ['BOOLEAN', '"yes"'],
    ['BOOLEAN', '"TRUE"'],
    ['DATE', '"2026-13-01"'],
    ['DATE', '"2026-02-29"'],
    ['DATE', '"2026-11-27T00:00:00Z"'],
    ['DATE', '"0000-01-01"'],
    ['DATE', '20261127'],
    ['TIMESTAMP', '"2026-11-27T01:02:03"'],
    ['TIMESTAMP', '"2026-11-27"'],
    ['TIMESTAMP', '"2026-11-27T24:00:00Z"'],
    ['TIMESTAMP', '"2026-11-27T23:59:60Z"'],
    ['TIMESTAMP', '"2026-11-31T00:00:00Z"'],
    ['TIMESTAMP', '"9999-12-31T23:00:00-01:00"'],
    ['TIMESTAMP', '"0001-01-01T00:30:00+01:00"'],
    ['TIMESTAMP', '"1764205323"'],
    ['TIMESTAMP', '1e20'],
    ['TIMESTAMP', 'true'],
  ])('%s refuses %s, naming the value and the type', (type, json) => {
    const err = failure(type, json);
    expect(err.kind).toBe('conversion');
    expect(err.message.startsWith(`${stringifyJson(parseJson(json))} is not a${type === 'INTEGER' ? 'n' : ''} ${type} (`)).toBe(true);
  });

  it('shortens a long value in the failure', () => {
    const err = failure('INTEGER', JSON.stringify('x'.repeat(500)));
    expect(err.message).toBe(`"${'x'.repeat(59)}… is not an INTEGER (a whole number within 64 bits, as a number or a string)`);
  });

  it('names an object as its JSON in the failure', () => {
    expect(failure('NUMERIC', '{"a":1}').message).toBe('{"a":1} is not a NUMERIC (a number with at most 29 digits before the point, as a number or a string)');
  });
});

describe('typed values: properties', () => {
  it('INTEGER takes every 64-bit integer as a number or a string, and nothing beyond', () => {
    fc.assert(fc.property(fc.bigInt({ min: INT64_MIN * 2n, max: INT64_MAX * 2n }), (n) => {
      const inRange = n >= INT64_MIN && n <= INT64_MAX;
      for (const json of [n.toString(), JSON.stringify(n.toString())]) {
        if (inRange) expect(convert('INTEGER', json)).toBe(n.toString());
        else expect(failure('INTEGER', json).kind).toBe('conversion');
      }
    }));
  });

  it('NUMERIC keeps the value of every decimal with at most 29 + 9 digits, whatever its notation', () => {
    // units * 10^-9, in one of several notations: plain, with an exponent, with zeros around.
    const decimal = fc.tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 38n - 1n }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 4 })).map(([neg, units, notation, zeros]) => {
      const digits = units.toString().padStart(10, '0');
      const plain = `${digits.slice(0, -9)}.${digits.slice(-9)}`;
      const sign = neg ? '-' : '';
      const text = [
        `${sign}${plain}`,
        `${sign}${units}e-9`,
        `${sign}${units}${'0'.repeat(zeros)}E-${9 + zeros}`,
        `${sign}${'0'.repeat(zeros)}${plain}${'0'.repeat(zeros)}`,
      ][notation];
      return { neg, units, text };
    });
    fc.assert(fc.property(decimal, ({ neg, units, text }) => {
      const out = convert('NUMERIC', JSON.stringify(text))!;
      const [whole, fraction = ''] = out.replace('-', '').split('.');
      expect(BigInt(whole + fraction.padEnd(9, '0'))).toBe(units);
      if (/^-?[1-9]/.test(text) || text.startsWith('0.')) expect(convert('NUMERIC', text)).toBe(out);
      expect(out.startsWith('-')).toBe(neg && units !== 0n);
      expect(out).not.toMatch(/e/i);
    }));
  });

  it('NUMERIC rounds beyond 9 digits after the point half away from zero', () => {
    fc.assert(fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 10, max: 14 }), (units, scale) => {
      const abs = units < 0n ? -units : units;
      const text = `${units < 0n ? '-' : ''}${abs.toString().padStart(scale + 1, '0').replace(new RegExp(`(\\d{${scale}})$`), '.$1')}`;
      const drop = 10n ** BigInt(scale - 9);
      const rounded = (abs / drop + (abs % drop >= drop / 2n ? 1n : 0n)) * (units < 0n ? -1n : 1n);
      const out = plainDecimalText(parseDecimal(text)!, 38, 9)!;
      const [whole, fraction = ''] = out.replace('-', '').split('.');
      expect(BigInt(whole + fraction.padEnd(9, '0')) * (out.startsWith('-') ? -1n : 1n)).toBe(rounded);
    }));
  });

  it('FLOAT keeps every finite double, from its text as a number or a string', () => {
    fc.assert(fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
      const out = convert('FLOAT', JSON.stringify(d))!;
      expect(Number(out)).toBe(d === 0 ? 0 : d);
      expect(convert('FLOAT', JSON.stringify(String(d)))).toBe(out);
    }));
  });

  it('DATE keeps every day of the years 0001 to 9999', () => {
    fc.assert(fc.property(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true }), (d) => {
      const day = d.toISOString().slice(0, 10);
      expect(convert('DATE', JSON.stringify(day))).toBe(day);
    }));
  });

  it('TIMESTAMP writes the same instant in UTC from any zone, and from seconds since 1970', () => {
    const instant = fc.date({ min: new Date('0002-01-01T00:00:00Z'), max: new Date('9998-12-31T00:00:00Z'), noInvalidDate: true });
    fc.assert(fc.property(instant, fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }), fc.integer({ min: 0, max: 999 }), (d, offset, micros) => {
      const local = new Date(d.getTime() + offset * 60_000).toISOString().slice(0, 23);
      const zone = `${offset < 0 ? '-' : '+'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
      const expected = micros === 0 ? d.toISOString() : `${d.toISOString().slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
      expect(convert('TIMESTAMP', JSON.stringify(`${local}${String(micros).padStart(3, '0')}${zone}`))).toBe(expected);
      // The same instant as seconds since 1970, to the microsecond.
      const total = BigInt(d.getTime()) * 1000n + BigInt(micros);
      const abs = total < 0n ? -total : total;
      const seconds = `${total < 0n ? '-' : ''}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, '0')}`;
      expect(convert('TIMESTAMP', seconds)).toBe(expected);
    }));
  });

  it('JSON keeps every value, in compact JSON (the NUL character aside: below)', () => {
    fc.assert(fc.property(fc.jsonValue().filter((v) => v !== null && !JSON.stringify(v).includes('\\u0000')), (v) => {
      const out = convert('JSON', JSON.stringify(v, null, 1))!;
      expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(v)));
      expect(out).toBe(JSON.stringify(v));
    }));
  });

  it('JSON writes the NUL character of a string as U+FFFD (PostgreSQL\'s jsonb cannot hold it), and leaves an escaped backslash before "u0000" alone', () => {
    const out = convert('JSON', JSON.stringify({ a: 'x\u0000y', b: '\\u0000', c: '\\\u0000', d: ['\u0000'] }))!;
    expect(JSON.parse(out)).toEqual({ a: 'x\ufffdy', b: '\\u0000', c: '\\\ufffd', d: ['\ufffd'] });
  });

  it('STRING keeps every string as it is', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => {
      expect(convert('STRING', JSON.stringify(s))).toBe(s);
    }));
  });
});
