import { describe, expect, it } from 'vitest';
import { decodeKafkaRecord, encodeKafkaRecord } from '../../../src/adapters/event-log/kafka-record.js';
import { kafkaTopicName, kafkaTopicOf, parseTopicBindings } from '../../../src/model/kafka-topic-names.js';
import type { IngestRecord } from '../../../src/model/record.js';

const record: IngestRecord = {
  receivedAt: new Date('2024-05-06T07:08:09.123Z'),
  ip: '2001:db8::1',
  headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': '10.0.0.1' },
  body: Buffer.from('{"a":1}'),
  signal: 'traces',
};

describe('the Kafka record format', () => {
  it('is value = body, headers = headers, timestamp = receive time, ip and signal in colon headers', () => {
    const out = encodeKafkaRecord(record);
    expect(out).toEqual({
      value: record.body,
      timestamp: String(Date.parse('2024-05-06T07:08:09.123Z')),
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': '10.0.0.1', ':sluice-ip': '2001:db8::1', ':sluice-signal': 'traces' },
    });
    expect(decodeKafkaRecord({ ...out, headers: Object.fromEntries(Object.entries(out.headers).map(([k, v]) => [k, Buffer.from(v)])) })).toEqual(record);
  });

  it('leaves out empty ip and signal', () => {
    expect(encodeKafkaRecord({ ...record, ip: '', signal: '' }).headers).toEqual(record.headers);
  });

  it('decodes producer records: canonical names, first of repeated headers, null value, unknown signal', () => {
    const decoded = decodeKafkaRecord({
      value: null,
      timestamp: '1700000000000',
      headers: { 'x-api-key': ['k1', 'k2'], 'X-API-KEY': 'k3', __proto__x: 'p', ':sluice-signal': 'bogus', skipped: undefined },
    });
    expect(decoded).toEqual({ receivedAt: new Date(1700000000000), ip: '', headers: { 'X-Api-Key': 'k1', __proto__x: 'p' }, body: Buffer.alloc(0), signal: '' });
  });

  it('keeps a header named __proto__ as a header', () => {
    const headers = JSON.parse('{"__proto__":"v"}') as Record<string, string>;
    const decoded = decodeKafkaRecord({ value: Buffer.from('x'), timestamp: '1', headers });
    expect(Object.getPrototypeOf(decoded.headers)).toBe(Object.prototype);
    expect(Object.keys(decoded.headers)).toEqual(['__proto__']);
  });
});

describe('source topic names', () => {
  const options = { prefix: 'sluice.', bindings: { legacy: 'orders-v1' } };
  it('derive from project, branch and source, unless the source is bound to a topic', () => {
    expect(kafkaTopicName(options, 1, 2, 'my-source')).toBe('sluice.1.2.my-source');
    expect(kafkaTopicOf(options, '1.2.my-source')).toEqual({ name: 'sluice.1.2.my-source', bound: false });
    expect(kafkaTopicName(options, 1, 2, 'legacy')).toBe('orders-v1');
    expect(kafkaTopicOf(options, '1.2.legacy')).toEqual({ name: 'orders-v1', bound: true });
  });

  it('parses bindings and refuses illegal topic names', () => {
    expect(parseTopicBindings('a=t1, b = t.2 ,')).toEqual({ a: 't1', b: 't.2' });
    expect(() => parseTopicBindings('a=bad topic')).toThrow(/legal Kafka topic/);
    expect(() => parseTopicBindings('=t')).toThrow();
    expect(() => kafkaTopicOf({ prefix: 'bad prefix ', bindings: {} }, '1.1.s')).toThrow(/not a legal Kafka topic/);
  });
});
