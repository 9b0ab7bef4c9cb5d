/**
 * Records as the batch endpoint takes them: each one JSON text, framed in a body the endpoint
 * cuts back into exactly those records (README of the package, "What goes over the wire").
 */
import { InvalidRecordError } from './errors.js';

/**
 * The JSON text of a record: an object (or any JSON value but a string) is stringified; a string
 * is taken as JSON text as it is, checked with JSON.parse unless `validate` is false.
 */
export function recordText(record: unknown, validate: boolean): string {
  if (typeof record === 'string') {
    if (validate) {
      try {
        JSON.parse(record);
      } catch (err) {
        throw new InvalidRecordError(`The record is a string that is not JSON text (${(err as Error).message}); send an object, or a string of JSON.`);
      }
    } else if (record.length === 0) {
      // The endpoint skips empty records: it would shift the positions of the others in its answer.
      throw new InvalidRecordError('The record is an empty string, not JSON text.');
    }
    return record;
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(record);
  } catch (err) {
    throw new InvalidRecordError(`The record cannot be turned into JSON: ${(err as Error).message}.`);
  }
  if (text === undefined) throw new InvalidRecordError(`The record is ${record === undefined ? 'undefined' : `a ${typeof record}`}, which has no JSON form.`);
  return text;
}

const nodeBuffer = (globalThis as { Buffer?: { byteLength(s: string, encoding: 'utf8'): number } }).Buffer;

/** The UTF-8 length of a string, as fetch and TextEncoder encode it (a lone surrogate is U+FFFD, 3 bytes). */
export function utf8Length(s: string): number {
  // Node's is native; browsers count here.
  if (nodeBuffer) return nodeBuffer.byteLength(s, 'utf8');
  return countUtf8(s);
}

/** utf8Length without Node's Buffer (exported for the tests, which hold it to TextEncoder). */
export function countUtf8(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      n += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 2 units, 4 bytes
      i++;
    } else {
      n += 2; // 3 bytes (a lone surrogate too: U+FFFD)
    }
  }
  return n;
}

export interface FramedBody {
  text: string;
  contentType: string;
}

/**
 * The body of a batch. NDJSON (one record a line, a final newline: the endpoint's cheapest form)
 * unless a line end could cut a record: a record with a line end in it (pretty-printed JSON),
 * or a lone record that is a JSON array (the endpoint would take its elements as the records).
 * Those batches go as one JSON array of the records, whose elements the endpoint keeps byte for
 * byte. `multiline`: whether some record holds a "\n" (noted as records are queued).
 */
export function frameBatch(records: readonly string[], multiline: boolean): FramedBody {
  if (multiline || (records.length === 1 && records[0].trimStart().startsWith('['))) {
    return { text: `[${records.join(',')}]`, contentType: 'application/json' };
  }
  return { text: records.join('\n') + '\n', contentType: 'application/x-ndjson' };
}
