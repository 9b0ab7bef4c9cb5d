import type { Signal } from '../model/definition.js';
import type { IngestRecord } from '../model/record.js';

/**
 * The binary form of a record: the embedded event log's value, and what the render worker gets
 * (records cross threads as one buffer of these, not as cloned objects).
 *
 * Layout (little endian): u8 format version, f64 receivedAt (epoch ms), u8 signal code, u16 ip
 * length, ip (utf8), u32 headers length, headers (JSON), body (the rest).
 */
const FORMAT_VERSION = 1;
/** Fixed part of an encoded record: version, receivedAt, signal, ip length, headers length. */
const FIXED_HEADER = 1 + 8 + 1 + 2 + 4;
const SIGNAL_CODES: Record<string, number> = { '': 0, logs: 1, metrics: 2, traces: 3 };
const SIGNALS_BY_CODE: (Signal | '')[] = ['', 'logs', 'metrics', 'traces'];

export function encodeRecord(record: IngestRecord): Buffer {
  const headers = JSON.stringify(record.headers);
  return encodeWithHeaders(record, headers, Buffer.byteLength(headers));
}

/**
 * The records of one append, encoded: the records of a request share their headers object, whose
 * JSON is then written once per object, not once per record.
 */
export function encodeRecords(records: readonly IngestRecord[]): Buffer[] {
  let lastHeaders: IngestRecord['headers'] | undefined;
  let json = '';
  let length = 0;
  return records.map((record) => {
    if (record.headers !== lastHeaders) {
      lastHeaders = record.headers;
      json = JSON.stringify(record.headers);
      length = Buffer.byteLength(json);
    }
    return encodeWithHeaders(record, json, length);
  });
}

function encodeWithHeaders(record: IngestRecord, headers: string, headersLength: number): Buffer {
  const ipLength = Buffer.byteLength(record.ip);
  const out = Buffer.allocUnsafe(FIXED_HEADER + ipLength + headersLength + record.body.length);
  out[0] = FORMAT_VERSION;
  out.writeDoubleLE(record.receivedAt.getTime(), 1);
  out[9] = SIGNAL_CODES[record.signal] ?? 0;
  out.writeUInt16LE(ipLength, 10);
  let pos = 12 + out.write(record.ip, 12, 'utf8');
  out.writeUInt32LE(headersLength, pos);
  pos += 4;
  pos += out.write(headers, pos, 'utf8');
  record.body.copy(out, pos);
  return out;
}

/** Where the parts of an encoded record are (see the layout above). */
interface Parts {
  receivedAt: number;
  signal: Signal | '';
  ip: string;
  headersStart: number;
  bodyStart: number;
}

function partsOf(b: Buffer): Parts {
  if (b[0] !== FORMAT_VERSION) throw new Error(`event log: unknown record format ${b[0]}`);
  const ipLength = b.readUInt16LE(10);
  const headersStart = 12 + ipLength + 4;
  return {
    receivedAt: b.readDoubleLE(1),
    signal: SIGNALS_BY_CODE[b[9]] ?? '',
    ip: b.toString('utf8', 12, 12 + ipLength),
    headersStart,
    bodyStart: headersStart + b.readUInt32LE(12 + ipLength),
  };
}

/** Decodes the first `size` bytes (default: all); the body is copied, so `bytes` may be reused afterwards. */
export function decodeRecord(bytes: Uint8Array, size?: unknown): IngestRecord {
  const length = typeof size === 'number' ? size : bytes.length;
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, length);
  const p = partsOf(b);
  const headers = JSON.parse(b.toString('utf8', p.headersStart, p.bodyStart)) as Record<string, string>;
  return { receivedAt: new Date(p.receivedAt), ip: p.ip, headers, body: Buffer.from(b.subarray(p.bodyStart, length)), signal: p.signal };
}

/**
 * Decodes the records of one batch, each a view of the batch's bytes (the body is not copied:
 * the bytes must outlive the records). Records of one request share their receive time and
 * headers: a record whose are the same bytes as the last one's gets the same Date and headers
 * object (read-only, as every reader of a record treats them).
 */
export class BatchDecoder {
  private lastAt = NaN;
  private lastDate = new Date(0);
  private lastHeaderBytes: Buffer | undefined;
  private lastHeaders: Record<string, string> = {};

  decode(bytes: Uint8Array): IngestRecord {
    const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    const p = partsOf(b);
    if (p.receivedAt !== this.lastAt) {
      this.lastAt = p.receivedAt;
      this.lastDate = new Date(p.receivedAt);
    }
    const headerBytes = b.subarray(p.headersStart, p.bodyStart);
    if (this.lastHeaderBytes === undefined || !headerBytes.equals(this.lastHeaderBytes)) {
      this.lastHeaders = JSON.parse(headerBytes.toString('utf8')) as Record<string, string>;
      this.lastHeaderBytes = headerBytes;
    }
    return { receivedAt: this.lastDate, ip: p.ip, headers: this.lastHeaders, body: b.subarray(p.bodyStart), signal: p.signal };
  }
}

/** Receive time (epoch ms) of an encoded record, without decoding the rest. */
export function encodedReceivedAt(bytes: Uint8Array): number {
  return new DataView(bytes.buffer, bytes.byteOffset + 1, 8).getFloat64(0, true);
}
