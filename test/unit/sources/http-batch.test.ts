import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JAVA_TO_STRING_MESSAGE, splitBatch, splitRecordByRecord } from '../../../src/sources/kafka-connect/split.js';

const bodies = (text: string) => splitBatch(Buffer.from(text)).records.map((r) => r.body.toString());

describe('splitBatch: the bodies Kafka Connect HTTP sinks send', () => {
  it('takes the elements of a JSON array, byte for byte', () => {
    expect(bodies('[{"a":1},{"b":[1,2,{"c":"x,y"}]} , 12345678901234567890]')).toEqual([
      '{"a":1}',
      '{"b":[1,2,{"c":"x,y"}]}',
      '12345678901234567890',
    ]);
  });

  it('takes newline-delimited JSON with and without a final newline, and CRLF', () => {
    expect(bodies('{"a":1}\n{"a":2}\n')).toEqual(['{"a":1}', '{"a":2}']);
    expect(bodies('{"a":1}\n{"a":2}')).toEqual(['{"a":1}', '{"a":2}']);
    expect(bodies('{"a":1}\r\n{"a":2}\r\n')).toEqual(['{"a":1}', '{"a":2}']);
  });

  it('takes comma-joined objects without brackets (Confluent default separator)', () => {
    expect(bodies('{"a":1},{"a":"},{"},{"a":3}')).toEqual(['{"a":1}', '{"a":"},{"}', '{"a":3}']);
  });

  it('takes a single object, and a pretty-printed one as one record', () => {
    expect(bodies('{"a":1}')).toEqual(['{"a":1}']);
    expect(bodies('{\n  "a": {\n    "b": 1\n  }\n}\n')).toEqual(['{\n  "a": {\n    "b": 1\n  }\n}']);
  });

  it('keeps strings with escaped quotes and brackets inside one record', () => {
    expect(bodies('{"s":"a\\"]}[{,"}\n{"t":2}')).toEqual(['{"s":"a\\"]}[{,"}', '{"t":2}']);
    // In an array, which is checked whole before its elements are cut: the second pass goes back.
    expect(bodies('[{"s":"a\\"b"},{"t":"c\\\\"},"\\u0022"]')).toEqual(['{"s":"a\\"b"}', '{"t":"c\\\\"}', '"\\u0022"']);
  });

  it('rejects the bad records of a batch one by one, with their position', () => {
    const batch = splitBatch(Buffer.from('{"a":1}\n{"a":\n{"a":3}\nnot json\n'));
    expect(batch.records.map((r) => r.body.toString())).toEqual(['{"a":1}', '{"a":3}']);
    expect(batch.rejected.map((r) => r.index)).toEqual([1, 3]);
    expect(batch.rejected[0].message).toMatch(/^The record is not valid JSON: /);
  });

  it('recognises Java toString() bodies and says how to configure the connector', () => {
    for (const text of ['{customer_name=Ed, trip_cost=29.1}', 'Struct{f1=value1}', '{a=1},{a=2}']) {
      const batch = splitBatch(Buffer.from(text));
      expect(batch.records).toEqual([]);
      expect(batch.rejected.length).toBeGreaterThan(0);
      expect(batch.rejected[0].message).toBe(JAVA_TO_STRING_MESSAGE);
    }
  });

  it('finds nothing in an empty or blank body', () => {
    expect(splitBatch(Buffer.from(''))).toEqual({ records: [], rejected: [] });
    expect(splitBatch(Buffer.from(' \n\n'))).toEqual({ records: [], rejected: [] });
  });

  it('drops empty elements between separators but keeps an array that is not closed as records to reject', () => {
    expect(bodies('{"a":1},,\n\n{"a":2},')).toEqual(['{"a":1}', '{"a":2}']);
    const open = splitBatch(Buffer.from('[{"a":1},{"a":2}'));
    expect(open.records).toEqual([]);
    expect(open.rejected.length).toBe(1);
  });
});

describe('splitBatch on valid bodies: one pass that checks the values in place', () => {
  const value: fc.Arbitrary<string> = fc.oneof(
    fc.json({ maxDepth: 3 }),
    fc.constantFrom('{"s":"a,b\\n]}"}', '12345678901234567890', '"é\\u00e9"', '{ "pretty" : [ 1 ,\n 2 ] }', '[]', '{}'),
  );
  const separator = fc.constantFrom('\n', '\r\n', ',', ',\n', ' , ', '\n\n', ',,');

  it('cuts the same records as the record-by-record split, as views of the body when it is ASCII', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 6 }), separator, fc.boolean(), fc.boolean(), (values, sep, asArray, trailing) => {
        const text = asArray ? `[${values.join(', ')}]` : values.join(sep) + (trailing ? sep : '');
        const body = Buffer.from(text);
        const fast = splitBatch(body);
        const slow = splitRecordByRecord(text);
        expect(fast.rejected).toEqual(slow.rejected);
        expect(fast.records.map((r) => r.body.toString())).toEqual(slow.records.map((r) => r.body.toString()));
        if (slow.rejected.length === 0 && text.length === body.length) {
          for (const r of fast.records) expect(r.body.buffer).toBe(body.buffer);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves a body with a broken record, or nested past the depth it follows, to the record-by-record split', () => {
    const deep = `${'['.repeat(100)}${']'.repeat(100)}\n{"a":1}`;
    expect(bodies(deep)).toEqual([`${'['.repeat(100)}${']'.repeat(100)}`, '{"a":1}']);
    const broken = splitBatch(Buffer.from('{"a":1}\n{"a":01}\n'));
    expect([broken.records.length, broken.rejected.map((r) => r.index)]).toEqual([1, [1]]);
  });
});
