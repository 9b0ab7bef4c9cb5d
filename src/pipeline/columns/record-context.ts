/**
 * One record with lazily computed views of it. Build one per record and hand the same object
 * to every sink's mapping: the body is decoded and parsed at most once, the header renderings
 * are computed at most once, whatever the number of columns, templates and sinks.
 */
import type { IngestRecord } from '../../model/record.js';
import type { RecordContext } from '../template-engine.js';
import { headerStr, headersJson, sortedHeaderEntries } from '../headers.js';
import { MappingError } from './errors.js';
import { FormSyntaxError, parseForm } from './form.js';
import { JsonIndex } from './json-index.js';
import { columnText, JsonSyntaxError, parseJson, type JsonValue } from './json.js';
import { lookupPath, type BodyPath } from './path.js';

export const UNSUPPORTED_CONTENT_TYPE =
  'supported types: application/json and application/x-www-form-urlencoded';

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.-]+\+)?json$/;

export type BodyFormat = 'json' | 'form';

/**
 * The body format of a Content-Type header: `application/json`, `application/<x>+json`, or
 * `application/x-www-form-urlencoded`. Media-type parameters (`; charset=utf-8`) and case are
 * ignored (the reference rejects parameters on JSON, a quirk Sluice does not keep).
 */
export function bodyFormat(contentType: string | undefined): BodyFormat | undefined {
  if (contentType === undefined) return undefined;
  const semi = contentType.indexOf(';');
  const mediaType = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (mediaType === 'application/json' || JSON_MEDIA_TYPE.test(mediaType)) return 'json';
  if (mediaType === 'application/x-www-form-urlencoded') return 'form';
  return undefined;
}

/** Parses a body by its Content-Type; throws a MappingError without a column. */
export function parseBody(contentType: string | undefined, body: string): JsonValue {
  const format = bodyFormat(contentType);
  if (format === 'json') {
    try {
      return parseJson(body);
    } catch (e) {
      if (e instanceof JsonSyntaxError) {
        throw new MappingError(`cannot parse request body: invalid JSON: ${e.message}`, 'invalidBody');
      }
      throw e;
    }
  }
  if (format === 'form') {
    try {
      return parseForm(body);
    } catch (e) {
      if (e instanceof FormSyntaxError) {
        throw new MappingError(`cannot parse request body: invalid form data: ${e.message}`, 'invalidBody');
      }
      throw e;
    }
  }
  throw new MappingError(
    `cannot parse request body: unsupported content type "${contentType ?? ''}", ${UNSUPPORTED_CONTENT_TYPE}`,
    'unsupportedMediaType',
  );
}

const UNSET = Symbol('unset');

export class LazyRecordContext implements RecordContext {
  private body: string | undefined;
  private parsed: JsonValue | MappingError | typeof UNSET = UNSET;
  /** The JSON body's member index; null when the body has none (then the whole tree is parsed). */
  private index: JsonIndex | null | undefined;
  private entries: Array<[string, string]> | undefined;
  private headerIndex: Map<string, string> | undefined;
  private json: string | undefined;
  private str: string | undefined;
  private iso: string | undefined;

  constructor(readonly record: IngestRecord) {}

  bodyString(): string {
    if (this.body === undefined) this.body = this.record.body.toString('utf8');
    return this.body;
  }

  parsedBody(): JsonValue {
    let p = this.parsed;
    if (p === UNSET) {
      try {
        p = parseBody(this.contentType(), this.bodyString());
      } catch (e) {
        if (!(e instanceof MappingError)) throw e;
        p = e;
      }
      this.parsed = p;
    }
    if (p instanceof MappingError) throw p;
    return p;
  }

  bodyValue(path: BodyPath): JsonValue | undefined {
    if (this.parsed === UNSET && path.length > 0) {
      const index = this.bodyIndex();
      if (index !== undefined) return index.valueAt(path);
    }
    return lookupPath(this.parsedBody(), path);
  }

  bodyText(path: BodyPath, rawString: boolean): string | undefined {
    if (this.parsed === UNSET && path.length > 0) {
      const index = this.bodyIndex();
      if (index !== undefined) return index.textAt(path, rawString);
    }
    const value = lookupPath(this.parsedBody(), path);
    return value === undefined ? undefined : columnText(value, rawString);
  }

  bodyIndex(): JsonIndex | undefined {
    if (this.index === undefined) this.index = (this.isJson() && JsonIndex.of(this.bodyString())) || null;
    return this.index ?? undefined;
  }

  /** An OTLP record's body is its flattened JSON whatever the request's Content-Type (protobuf, or the test endpoint's payload); HTTP records follow their Content-Type. */
  private contentType(): string | undefined {
    return this.record.signal === '' ? this.header('Content-Type') : 'application/json';
  }

  private isJson(): boolean {
    return bodyFormat(this.contentType()) === 'json';
  }

  headerEntries(): ReadonlyArray<readonly [string, string]> {
    if (this.entries === undefined) this.entries = sortedHeaderEntries(this.record.headers);
    return this.entries;
  }

  header(canonicalName: string): string | undefined {
    const direct = this.record.headers[canonicalName];
    if (direct !== undefined && Object.prototype.hasOwnProperty.call(this.record.headers, canonicalName)) {
      return direct;
    }
    if (this.headerIndex === undefined) this.headerIndex = new Map(this.headerEntries());
    return this.headerIndex.get(canonicalName);
  }

  headersJson(): string {
    if (this.json === undefined) this.json = headersJson(this.headerEntries());
    return this.json;
  }

  headerStr(): string {
    if (this.str === undefined) this.str = headerStr(this.headerEntries());
    return this.str;
  }

  datetime(): string {
    if (this.iso === undefined) this.iso = isoTime(this.record.receivedAt);
    return this.iso;
  }
}

/**
 * The ISO text of a time, remembered for the last time asked: the records of one request share
 * their receive time, and a batch read from the log holds few distinct ones, so most rows reuse
 * the text instead of formatting it anew.
 */
let lastTime = NaN;
let lastIso = '';
function isoTime(date: Date): string {
  const ms = date.getTime();
  if (ms !== lastTime) {
    lastIso = date.toISOString();
    lastTime = ms;
  }
  return lastIso;
}

/** The context of one record, to share between all sinks that map it. */
export function createRecordContext(record: IngestRecord): RecordContext {
  return new LazyRecordContext(record);
}
