/**
 * Cuts the body of a Kafka Connect HTTP sink request into records. The connectors send,
 * depending on their configuration:
 *
 * - a JSON array `[{...},{...}]` (Confluent `batch.json.as.array=true`, Aiven with `[`,`,`,`]`);
 * - newline-delimited JSON, with or without a final newline (Aiven's default);
 * - objects joined by commas without brackets (Confluent's default separator);
 * - a single JSON value (`batch.max.size=1`);
 * - Java `toString()` output such as `{name=Ed, cost=29.1}` or `Struct{f1=v}` when the value
 *   converter is not JSON: never JSON, refused with a message that says how to fix it.
 *
 * Each record keeps the exact bytes of its value (numbers beyond 2^53 and key order survive);
 * the values are only validated, never built. A record that is not valid JSON is rejected on its
 * own, so one bad record does not fail the batch (connectors retry any 4xx and then stop the task).
 */
import { skipValue, skipWs } from '../../pipeline/columns/json-scan.js';

export interface BatchRecord {
  /** The record's value, byte for byte as sent. */
  body: Buffer;
}

export interface RejectedRecord {
  /** Position of the record in the request, from 0. */
  index: number;
  message: string;
}

export interface SplitBatch {
  records: BatchRecord[];
  rejected: RejectedRecord[];
}

const JAVA_TO_STRING = /^(?:Struct)?\{\s*[A-Za-z_$][\w$.-]*\s*=/;

export const JAVA_TO_STRING_MESSAGE =
  'The record looks like the Java toString() form of a Kafka record ({key=value, ...} or Struct{...}), not JSON. ' +
  'Configure the connector to send JSON: value.converter=org.apache.kafka.connect.json.JsonConverter ' +
  '(value.converter.schemas.enable=false) and, on the Confluent connector, request.body.format=json.';

interface Segment {
  start: number;
  end: number;
}

const enum Ch {
  Tab = 9,
  Newline = 10,
  Return = 13,
  Space = 32,
  Quote = 34,
  Comma = 44,
  Backslash = 92,
  OpenBracket = 91,
  CloseBracket = 93,
  OpenBrace = 123,
  CloseBrace = 125,
}

function isSpace(c: number): boolean {
  return c === Ch.Space || c === Ch.Newline || c === Ch.Return || c === Ch.Tab;
}

/**
 * Calls `visit` with the index and code of every character of `text[from, to)` outside JSON
 * strings (escapes respected); stops early when `visit` returns true.
 */
function scanOutsideStrings(text: string, from: number, to: number, visit: (i: number, c: number) => boolean | void): void {
  let inString = false;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === Ch.Backslash) i++;
      else if (c === Ch.Quote) inString = false;
    } else if (c === Ch.Quote) inString = true;
    else if (visit(i, c)) return;
  }
}

/**
 * Splits `text[from, to)` at the commas (and, when `newlines`, the line ends) that are outside
 * any string, object or array. Segments are trimmed; empty ones are dropped.
 */
function splitTopLevel(text: string, from: number, to: number, newlines: boolean): Segment[] {
  const segments: Segment[] = [];
  let depth = 0;
  let start = from;
  const push = (end: number) => {
    let s = start;
    let e = end;
    while (s < e && isSpace(text.charCodeAt(s))) s++;
    while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
    if (e > s) segments.push({ start: s, end: e });
  };
  scanOutsideStrings(text, from, to, (i, c) => {
    if (c === Ch.OpenBrace || c === Ch.OpenBracket) depth++;
    else if (c === Ch.CloseBrace || c === Ch.CloseBracket) depth = Math.max(0, depth - 1);
    else if (depth === 0 && (c === Ch.Comma || (newlines && c === Ch.Newline))) {
      push(i);
      start = i + 1;
    }
  });
  push(to);
  return segments;
}

/** Lines of the text; a trailing comma of a line (separator ",\n") is not part of the record. */
function splitLines(text: string): Segment[] {
  const segments: Segment[] = [];
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let s = start;
    let e = end;
    while (s < e && isSpace(text.charCodeAt(s))) s++;
    while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
    if (e > s && text.charCodeAt(e - 1) === Ch.Comma) e--;
    if (e > s) segments.push({ start: s, end: e });
    start = end + 1;
  }
  return segments;
}

/** Index just past the JSON value that starts at `from` (strings and nesting respected), or -1. */
function endOfValue(text: string, from: number): number {
  let depth = 0;
  let end = -1;
  scanOutsideStrings(text, from, text.length, (i, c) => {
    if (c === Ch.OpenBrace || c === Ch.OpenBracket) depth++;
    else if (c === Ch.CloseBrace || c === Ch.CloseBracket) {
      depth--;
      if (depth === 0) {
        end = i + 1;
        return true;
      }
    }
  });
  return end;
}

function validate(text: string, segments: Segment[]): SplitBatch {
  const records: BatchRecord[] = [];
  const rejected: RejectedRecord[] = [];
  segments.forEach((segment, index) => {
    const raw = text.slice(segment.start, segment.end);
    try {
      JSON.parse(raw);
      records.push({ body: Buffer.from(raw, 'utf8') });
    } catch (err) {
      const message = JAVA_TO_STRING.test(raw)
        ? JAVA_TO_STRING_MESSAGE
        : `The record is not valid JSON: ${(err as Error).message}.`;
      rejected.push({ index, message });
    }
  });
  return { records, rejected };
}

/**
 * The records of a body in which every value is valid JSON and separated as one of the formats
 * says, found in one pass that checks the values in place (json-scan.ts); undefined for any
 * other body (a broken record, a value nested deeper than json-scan.ts follows, Java toString()
 * output), which the split below cuts and words record by record. The same segments as there:
 * for a valid body the two agree.
 */
function splitValid(text: string, body: Buffer): SplitBatch | undefined {
  // Decoding never gives more characters than bytes, so as many of each means every byte is one
  // character (ASCII, or a byte that is not UTF-8, read as U+FFFD): the characters are at their
  // byte offsets, and the records are views of the body's bytes.
  const ascii = text.length === body.length;
  const records: BatchRecord[] = [];
  const push = (start: number, end: number) => {
    records.push({ body: ascii ? body.subarray(start, end) : Buffer.from(text.slice(start, end), 'utf8') });
  };
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) === Ch.OpenBracket && skipWs(text, Math.max(0, skipValue(text, i, 0))) === text.length) {
    // One JSON array spanning the whole body: its elements.
    i = skipWs(text, i + 1);
    while (text.charCodeAt(i) !== Ch.CloseBracket) {
      const valueEnd = skipValue(text, i, 1);
      if (valueEnd < 0) return undefined; // checked above: never, but never a loop either
      push(i, valueEnd);
      i = skipWs(text, valueEnd);
      if (text.charCodeAt(i) === Ch.Comma) i = skipWs(text, i + 1);
    }
    return { records, rejected: [] };
  }
  // Values separated by commas and/or line ends (empty separations are no record).
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === Ch.Comma || isSpace(c)) {
      i++;
      continue;
    }
    const end = skipValue(text, i, 0);
    if (end < 0) return undefined;
    push(i, end);
    // Up to the next separator: spaces, then a comma or a line end (or the body's end).
    i = end;
    while (i < text.length && (text.charCodeAt(i) === Ch.Space || text.charCodeAt(i) === Ch.Tab || text.charCodeAt(i) === Ch.Return)) i++;
    if (i < text.length && text.charCodeAt(i) !== Ch.Comma && text.charCodeAt(i) !== Ch.Newline) return undefined;
  }
  return { records, rejected: [] };
}

/** Splits a connector request body into records; see the module comment for the formats. */
export function splitBatch(body: Buffer): SplitBatch {
  const text = body.toString('utf8');
  return splitValid(text, body) ?? splitRecordByRecord(text);
}

/**
 * The split of any body: cut where the formats separate records (where a broken record
 * unbalances the brackets, by lines), then each record checked by JSON.parse, which words
 * what is wrong with it. Exported for the tests that hold splitValid to it.
 */
export function splitRecordByRecord(text: string): SplitBatch {
  let first = 0;
  while (first < text.length && isSpace(text.charCodeAt(first))) first++;
  if (first === text.length) return { records: [], rejected: [] };

  // One JSON array that spans the whole body: its elements are the records.
  if (text.charCodeAt(first) === Ch.OpenBracket) {
    const end = endOfValue(text, first);
    if (end > 0 && text.slice(end).trim() === '') return validate(text, splitTopLevel(text, first + 1, end - 1, false));
  }
  // Otherwise values joined by commas and/or newlines. Where a broken record unbalances the
  // brackets, the structural split swallows the rest; splitting by lines then keeps the good
  // lines of an NDJSON batch. The split that accepts more records wins.
  const structural = validate(text, splitTopLevel(text, first, text.length, true));
  if (structural.rejected.length === 0 || !text.includes('\n')) return structural;
  const byLine = validate(text, splitLines(text));
  return byLine.records.length > structural.records.length ? byLine : structural;
}
