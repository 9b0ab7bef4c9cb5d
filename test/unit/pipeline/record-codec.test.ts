import { describe, expect, it } from 'vitest';
import { BatchDecoder, decodeRecord, encodeRecord, encodeRecords } from '../../../src/pipeline/record-codec.js';
import type { IngestRecord } from '../../../src/model/record.js';

const shared = { 'Content-Type': 'application/json', 'X-Trace': 'é' };
const records: IngestRecord[] = [
  { receivedAt: new Date(1_700_000_000_123), ip: '10.0.0.1', headers: shared, body: Buffer.from('{"a":1}'), signal: '' },
  { receivedAt: new Date(1_700_000_000_123), ip: '10.0.0.1', headers: shared, body: Buffer.from('{"a":2}'), signal: '' },
  { receivedAt: new Date(1_700_000_000_124), ip: '::1', headers: { 'Content-Type': 'text/plain' }, body: Buffer.from('ü'), signal: 'logs' },
  { receivedAt: new Date(1_700_000_000_124), ip: '::1', headers: shared, body: Buffer.alloc(0), signal: 'traces' },
];

describe('record codec', () => {
  it('encodes the records of an append as encodeRecord does each, the shared headers written once', () => {
    expect(encodeRecords(records)).toEqual(records.map(encodeRecord));
  });

  it('decodes a batch as decodeRecord does each, sharing the receive time and headers of consecutive records that have the same', () => {
    const encoded = encodeRecords(records);
    const decoder = new BatchDecoder();
    const decoded = encoded.map((e) => decoder.decode(e));
    expect(decoded).toEqual(encoded.map((e) => decodeRecord(e)));
    expect(decoded[1].headers).toBe(decoded[0].headers);
    expect(decoded[1].receivedAt).toBe(decoded[0].receivedAt);
    expect(decoded[2].headers).not.toBe(decoded[1].headers);
    expect(decoded[3].headers).toEqual(shared);
    // The bodies are views of the batch's bytes, not copies.
    expect(decoded[0].body.buffer).toBe(encoded[0].buffer);
  });
});
