/**
 * The Kafka record format of Sluice's source topics (docs/kafka.md, "Kafka"), which is also what a
 * Kafka producer writes to feed a source directly:
 *
 * - value: the body bytes, unchanged (a null value is an empty body);
 * - headers: the request headers, one Kafka header each (Go-canonical names on the way back,
 *   first value of a repeated name);
 * - timestamp: the receive time (epoch ms; a producer's CreateTime or the broker's
 *   LogAppendTime);
 * - key: none (Sluice does not use it; producers may set one).
 *
 * What an HTTP request has beyond headers travels in headers whose names start with a colon
 * (`:sluice-ip`, `:sluice-signal`): no HTTP header name can contain one, so a client can never
 * forge them through the ingestion URL. A producer may set them.
 */
import type { Signal } from '../../model/definition.js';
import { canonicalHeaderKey } from '../../pipeline/headers.js';
import type { IngestRecord } from '../../model/record.js';

export const IP_HEADER = ':sluice-ip';
export const SIGNAL_HEADER = ':sluice-signal';
const SIGNALS: ReadonlySet<string> = new Set<Signal>(['logs', 'metrics', 'traces']);

/** A record as kafkajs sends it. */
export interface KafkaOutMessage {
  value: Buffer;
  timestamp: string;
  headers: Record<string, string>;
}

/** The parts of a consumed kafkajs message the decoding reads. */
export interface KafkaInMessage {
  value: Buffer | null;
  timestamp: string;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

export function encodeKafkaRecord(record: IngestRecord): KafkaOutMessage {
  const headers: Record<string, string> = { ...record.headers };
  if (record.ip) headers[IP_HEADER] = record.ip;
  if (record.signal) headers[SIGNAL_HEADER] = record.signal;
  return { value: record.body, timestamp: String(record.receivedAt.getTime()), headers };
}

export function decodeKafkaRecord(message: KafkaInMessage): IngestRecord {
  // A Map, then fromEntries: a header named __proto__ stays an ordinary header.
  const headers = new Map<string, string>();
  let ip = '';
  let signal: Signal | '' = '';
  for (const [name, raw] of Object.entries(message.headers ?? {})) {
    const first = Array.isArray(raw) ? raw[0] : raw;
    if (first === undefined) continue;
    const value = typeof first === 'string' ? first : first.toString('utf8');
    if (name === IP_HEADER) ip = value;
    else if (name === SIGNAL_HEADER) signal = SIGNALS.has(value) ? (value as Signal) : '';
    else {
      const key = canonicalHeaderKey(name);
      if (!headers.has(key)) headers.set(key, value);
    }
  }
  const ms = Number(message.timestamp);
  return {
    receivedAt: new Date(Number.isFinite(ms) && ms >= 0 ? ms : Date.now()),
    ip,
    headers: Object.fromEntries(headers),
    body: message.value ?? Buffer.alloc(0),
    signal,
  };
}
