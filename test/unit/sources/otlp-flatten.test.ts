import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import Long from 'long';
import { flatten, FlattenLimitError, flattenLogs, flattenMetrics, flattenTraces } from '../../../src/sources/otlp/flatten.js';
import { anyValueJson, attributesJson, timestampJson, uint64Json, int64Json } from '../../../src/sources/otlp/values.js';
import type { Metric } from '../../../src/sources/otlp/model.js';

const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }, { key: 'host.cpus', value: { intValue: 4 } }] };
const scope = { name: 'lib', version: '2.1' };
const RES = { 'service.name': 'shop', 'host.cpus': 4 };
const SCOPE = { name: 'lib', version: '2.1' };
const hex = (h: string) => Buffer.from(h, 'hex');

describe('value conversions', () => {
  it('formats nanosecond timestamps as RFC 3339 in UTC, "" for 0', () => {
    expect(timestampJson(0)).toBe('""');
    expect(timestampJson(undefined)).toBe('""');
    expect(timestampJson('1700000000123456789')).toBe('"2023-11-14T22:13:20.123456789Z"');
    expect(timestampJson(1_700_000_000_000_000_000n)).toBe('"2023-11-14T22:13:20.000000000Z"');
    expect(timestampJson(1_700_000_000_120_000_000n)).toBe('"2023-11-14T22:13:20.120000000Z"');
    expect(timestampJson(Long.fromString('1700000000000000001', true))).toBe('"2023-11-14T22:13:20.000000001Z"');
    // One width for every value, so that the text sorts as the time does.
    const times = ['1700000000576000000', '1700000000576199635', '1700000000000000000', '1700000000999999999'].map((ns) => JSON.parse(timestampJson(ns)) as string);
    expect(new Set(times.map((t) => t.length)).size).toBe(1);
    expect([...times].sort()).toEqual([times[2], times[0], times[1], times[3]]);
    // protobufjs longs (the decoder's form) give the same text as the exact bigint, across
    // high words, second boundaries and in any order (the conversion caches the last ones).
    const samples = ['1700000000999999999', '1700000001000000000', '1700000004294967295', '1700000004294967296', '1795716394880123456', '1700000000000000001', '4294967296', '4294967295999999999'];
    for (const ns of [...samples, ...samples.reverse()]) {
      const big = BigInt(ns);
      const seconds = big / 1_000_000_000n;
      const expected = `"${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${String(big % 1_000_000_000n).padStart(9, '0')}Z"`;
      expect(timestampJson(Long.fromString(ns, true)), ns).toBe(expected);
      expect(timestampJson(Long.fromString(ns, false)), ns).toBe(expected);
    }
    // uint64 beyond int64 saturates.
    expect(timestampJson(Long.fromString('18446744073709551615', true))).toBe('"2262-04-11T23:47:16.854775807Z"');
  });

  it('writes 64-bit integers exactly and saturates uint64 to int64', () => {
    expect(int64Json(Long.fromString('9007199254740993'))).toBe('9007199254740993');
    expect(int64Json(Long.fromString('-9007199254740993'))).toBe('-9007199254740993');
    expect(int64Json(Long.fromInt(-5))).toBe('-5');
    expect(int64Json('-42')).toBe('-42');
    expect(uint64Json(Long.fromString('18446744073709551615', true))).toBe('9223372036854775807');
    expect(uint64Json(Long.fromString('4294967296', true))).toBe('4294967296');
    expect(uint64Json(7)).toBe('7');
  });

  it('converts every AnyValue kind; bytes as base64, empty as null, NaN as a string', () => {
    expect(anyValueJson({ stringValue: 'a<b' })).toBe('"a\\u003cb"');
    expect(anyValueJson({ boolValue: false })).toBe('false');
    expect(anyValueJson({ intValue: Long.fromString('12345678901234567') })).toBe('12345678901234567');
    expect(anyValueJson({ doubleValue: 1.5 })).toBe('1.5');
    expect(anyValueJson({ doubleValue: NaN })).toBe('"NaN"');
    expect(anyValueJson({ bytesValue: Buffer.from([1, 2, 255]) })).toBe('"AQL/"');
    expect(anyValueJson({ arrayValue: { values: [{ intValue: 1 }, { stringValue: 'x' }, {}] } })).toBe('[1,"x",null]');
    expect(anyValueJson({ kvlistValue: { values: [{ key: 'k', value: { kvlistValue: { values: [{ key: 'n', value: { boolValue: true } }] } } }] } })).toBe('{"k":{"n":true}}');
    expect(anyValueJson({})).toBe('null');
    expect(anyValueJson(undefined)).toBe('null');
  });

  it('keeps dotted attribute keys whole; a repeated key keeps its last value', () => {
    expect(attributesJson([{ key: 'http.method', value: { stringValue: 'GET' } }, { key: 'a', value: { intValue: 1 } }, { key: 'http.method', value: { stringValue: 'POST' } }])).toBe(
      '{"http.method":"POST","a":1}',
    );
    expect(attributesJson(undefined)).toBe('{}');
  });

  it('writes any list of attributes as a map would hold it, short or long, with or without repeats', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'k.e', ''), fc.integer()), { maxLength: 40 }), (pairs) => {
      const map = new Map<string, number>();
      for (const [k, v] of pairs) map.set(k, v);
      const expected = `{${[...map].map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
      expect(attributesJson(pairs.map(([key, v]) => ({ key, value: { intValue: v } })))).toBe(expected);
    }), { numRuns: 500 });
  });

  it('cuts values nested deeper than the limit instead of recursing without end', () => {
    let v: any = { stringValue: 'leaf' };
    for (let i = 0; i < 10_000; i++) v = { arrayValue: { values: [v] } };
    const json = anyValueJson(v);
    expect(() => JSON.parse(json)).not.toThrow();
    expect(json).toContain('null');
  });
});

describe('flattening logs', () => {
  it('makes one record per log record with the reference fields, resource and scope', () => {
    const records = flattenLogs({
      resourceLogs: [{
        resource,
        scopeLogs: [{
          scope,
          logRecords: [
            {
              timeUnixNano: '1700000000123456789', observedTimeUnixNano: '1700000000200000000', severityNumber: 17, severityText: 'ERROR',
              body: { kvlistValue: { values: [{ key: 'msg', value: { stringValue: 'boom' } }] } }, flags: 1,
              traceId: hex('5b8efff798038103d269b633813fc60c'), spanId: hex('eee19b7ec3c1b174'),
              attributes: [{ key: 'user.id', value: { intValue: 7 } }],
            },
            { body: { stringValue: 'plain' }, traceId: Buffer.alloc(16), spanId: Buffer.alloc(0) },
          ],
        }],
      }],
    });
    expect(records).toHaveLength(2);
    expect(records[0]).toBe(
      '{"timestamp":"2023-11-14T22:13:20.123456789Z","observed_timestamp":"2023-11-14T22:13:20.200000000Z","severity_number":17,"severity_text":"ERROR",' +
        '"body":{"msg":"boom"},"flags":1,"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174",' +
        '"attributes":{"user.id":7},"resource":{"service.name":"shop","host.cpus":4},"scope":{"name":"lib","version":"2.1"}}',
    );
    // Empty (or all-zero) ids are omitted; unset times are "".
    expect(JSON.parse(records[1])).toEqual({ timestamp: '', observed_timestamp: '', severity_number: 0, severity_text: '', body: 'plain', flags: 0, attributes: {}, resource: RES, scope: SCOPE });
  });

  it('carries each resource and scope into its own records', () => {
    const records = flatten('logs', {
      resourceLogs: [
        { resource, scopeLogs: [{ scope, logRecords: [{}] }, { scope: { name: 'other' }, logRecords: [{}, {}] }] },
        { scopeLogs: [{ logRecords: [{}] }] },
      ],
    }).map((r) => JSON.parse(r));
    expect(records.map((r) => [r.resource['service.name'] ?? null, r.scope.name])).toEqual([['shop', 'lib'], ['shop', 'other'], ['shop', 'other'], [null, '']]);
  });

  it('stops at the byte limit: a large resource copied into many tiny records cannot blow up memory', () => {
    const big = { attributes: [{ key: 'blob', value: { stringValue: 'x'.repeat(10_000) } }] };
    const request = { resourceLogs: [{ resource: big, scopeLogs: [{ logRecords: Array.from({ length: 1000 }, () => ({})) }] }] };
    expect(() => flatten('logs', request, 1_000_000)).toThrow(FlattenLimitError);
    expect(flatten('logs', request, 20_000_000)).toHaveLength(1000);
  });

  it('returns nothing for an empty request', () => {
    expect(flattenLogs({})).toEqual([]);
    expect(flattenMetrics({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'no data' }] }] }] })).toEqual([]);
    expect(flattenTraces({ resourceSpans: [] })).toEqual([]);
  });
});

describe('flattening metrics: one record per data point of every type', () => {
  const flat = (m: Metric) => flattenMetrics({ resourceMetrics: [{ resource, scopeMetrics: [{ scope, metrics: [m] }] }] }).map((r) => JSON.parse(r));
  const head = (type: string) => ({
    metric_name: 'm', metric_description: 'd', metric_unit: 'ms', metric_type: type, resource: RES, scope: SCOPE,
    start_timestamp: '2023-11-14T22:13:20.000000000Z', timestamp: '2023-11-14T22:13:21.000000000Z',
  });
  const times = { startTimeUnixNano: '1700000000000000000', timeUnixNano: '1700000001000000000' };
  const base = { name: 'm', description: 'd', unit: 'ms' };

  it('gauge: int or double value, null when empty', () => {
    const records = flat({ ...base, gauge: { dataPoints: [{ ...times, asInt: Long.fromString('9007199254740993'), attributes: [{ key: 'k', value: { stringValue: 'v' } }] }, { ...times, asDouble: 0.25 }, { ...times }] } });
    expect(records).toEqual([
      { ...head('gauge'), attributes: { k: 'v' }, value: 9007199254740992 /* JSON.parse rounds; the text is exact */ },
      { ...head('gauge'), attributes: {}, value: 0.25 },
      { ...head('gauge'), attributes: {}, value: null },
    ]);
    expect(flattenMetrics({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ gauge: { dataPoints: [{ asInt: Long.fromString('9007199254740993') }] } }] }] }] })[0]).toContain('"value":9007199254740993');
  });

  it('sum: monotonic flag and temporality as a name', () => {
    expect(flat({ ...base, sum: { isMonotonic: true, aggregationTemporality: 1, dataPoints: [{ ...times, asDouble: 3 }] } })).toEqual([
      { ...head('sum'), attributes: {}, value: 3, is_monotonic: true, aggregation_temporality: 'Delta' },
    ]);
    expect(flat({ ...base, sum: { aggregationTemporality: 2, dataPoints: [{ ...times, asInt: -4 }] } })[0]).toMatchObject({ value: -4, is_monotonic: false, aggregation_temporality: 'Cumulative' });
  });

  it('histogram: count, optional sum/min/max, buckets and bounds', () => {
    const records = flat({
      ...base,
      histogram: {
        aggregationTemporality: 2,
        dataPoints: [
          { ...times, count: Long.fromNumber(3, true), sum: 7.5, min: 1, max: 4, bucketCounts: [Long.fromNumber(1, true), Long.fromNumber(2, true)], explicitBounds: [2] },
          { ...times, count: 0, bucketCounts: [], explicitBounds: [] },
        ],
      },
    });
    expect(records[0]).toEqual({ ...head('histogram'), attributes: {}, count: 3, sum: 7.5, min: 1, max: 4, bucket_counts: [1, 2], explicit_bounds: [2], aggregation_temporality: 'Cumulative' });
    expect(records[1]).toEqual({ ...head('histogram'), attributes: {}, count: 0, bucket_counts: [], explicit_bounds: [], aggregation_temporality: 'Cumulative' });
  });

  it('exponential histogram: scale, zero count and (Sluice addition) the buckets', () => {
    const records = flat({
      ...base,
      exponentialHistogram: {
        aggregationTemporality: 1,
        dataPoints: [{ ...times, count: 4, sum: 10, scale: -2, zeroCount: 1, positive: { offset: 3, bucketCounts: [1, 2] }, negative: { offset: -1, bucketCounts: [] } }],
      },
    });
    expect(records).toEqual([
      {
        ...head('exponential_histogram'), attributes: {}, count: 4, sum: 10, scale: -2, zero_count: 1,
        positive: { offset: 3, bucket_counts: [1, 2] }, negative: { offset: -1, bucket_counts: [] }, aggregation_temporality: 'Delta',
      },
    ]);
  });

  it('summary: count, sum and quantile values', () => {
    expect(flat({ ...base, summary: { dataPoints: [{ ...times, count: 10, sum: 55, quantileValues: [{ quantile: 0.5, value: 5 }, { quantile: 0.99, value: 9.9 }] }] } })).toEqual([
      { ...head('summary'), attributes: {}, count: 10, sum: 55, quantile_values: [{ quantile: 0.5, value: 5 }, { quantile: 0.99, value: 9.9 }] },
    ]);
  });

  it('several metrics and data points keep request order', () => {
    const records = flattenMetrics({
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'a', gauge: { dataPoints: [{ asInt: 1 }, { asInt: 2 }] } }, { name: 'b', summary: { dataPoints: [{ count: 1 }] } }] }] }],
    }).map((r) => JSON.parse(r));
    expect(records.map((r) => `${r.metric_name}:${r.metric_type}`)).toEqual(['a:gauge', 'a:gauge', 'b:summary']);
  });
});

describe('flattening traces', () => {
  it('makes one record per span with kind and status names, events and links', () => {
    const [record] = flattenTraces({
      resourceSpans: [{
        resource,
        scopeSpans: [{
          scope,
          spans: [{
            traceId: hex('5b8efff798038103d269b633813fc60c'), spanId: hex('eee19b7ec3c1b174'), parentSpanId: hex('0102030405060708'),
            traceState: 'k=v', name: 'GET /', kind: 2, flags: 256, startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000000500000000',
            status: { code: 2, message: 'failed' },
            attributes: [{ key: 'http.status_code', value: { intValue: 500 } }],
            events: [{ timeUnixNano: '1700000000100000000', name: 'exception', attributes: [{ key: 'exception.type', value: { stringValue: 'E' } }] }],
            links: [{ traceId: hex('00000000000000000000000000000001'), spanId: hex('0000000000000002'), traceState: '', flags: 1, attributes: [] }],
          }],
        }],
      }],
    });
    expect(JSON.parse(record)).toEqual({
      timestamp: '2023-11-14T22:13:20.000000000Z', end_timestamp: '2023-11-14T22:13:20.500000000Z',
      trace_id: '5b8efff798038103d269b633813fc60c', span_id: 'eee19b7ec3c1b174', parent_span_id: '0102030405060708',
      trace_state: 'k=v', name: 'GET /', kind: 'Server', flags: 256, status_code: 'Error', status_message: 'failed',
      attributes: { 'http.status_code': 500 },
      events: [{ timestamp: '2023-11-14T22:13:20.100000000Z', name: 'exception', attributes: { 'exception.type': 'E' } }],
      links: [{ trace_id: '00000000000000000000000000000001', span_id: '0000000000000002', trace_state: '', attributes: {}, flags: 1 }],
      resource: RES, scope: SCOPE,
    });
    expect(Object.keys(JSON.parse(record))).toEqual([
      'timestamp', 'end_timestamp', 'trace_id', 'span_id', 'parent_span_id', 'trace_state', 'name', 'kind', 'flags', 'status_code', 'status_message',
      'attributes', 'events', 'links', 'resource', 'scope',
    ]);
  });

  it('omits an empty parent span id and names every kind and status', () => {
    const kinds = [0, 1, 2, 3, 4, 5].map((kind) => JSON.parse(flattenTraces({ resourceSpans: [{ scopeSpans: [{ spans: [{ kind, status: { code: kind % 3 } }] }] }] })[0]));
    expect(kinds.map((s) => s.kind)).toEqual(['Unspecified', 'Internal', 'Server', 'Client', 'Producer', 'Consumer']);
    expect(kinds.map((s) => s.status_code)).toEqual(['Unset', 'Ok', 'Error', 'Unset', 'Ok', 'Error']);
    expect(kinds[0]).not.toHaveProperty('parent_span_id');
  });
});
