import type { IngestRecord } from '../model/record.js';
import type { JsonValue } from './columns/json.js';
import type { MappingErrorKind } from './columns/errors.js';
import type { JsonIndex } from './columns/json-index.js';
import type { BodyPath } from './columns/path.js';

/** The time budget of one template evaluation unless the server is told otherwise. */
export const TEMPLATE_TIMEOUT_MS = 100;

/** The server's flags that set the limits of template evaluations, as their errors name them. */
export const TEMPLATE_LIMIT_FLAGS = {
  timeoutMs: '--template-timeout',
  maxArrayLength: '--template-max-array-length',
  maxStringLength: '--template-max-string-length',
  maxAllocationBytes: '--template-max-allocation',
} as const;

/**
 * TemplateEngine port: compiles a Jsonnet template once (per sink version) and evaluates it
 * per record with the seed's globals (Ip, Body, BodyStr, Header, HeaderStr, Now) bound to
 * that record. The service uses Sluice's own compiler (adapters/jsonnet/sluice-engine.ts);
 * the libjsonnet adapter (test/support/libjsonnet-engine.ts) remains as the tests' oracle.
 *
 * Callers should start the evaluations of a whole micro-batch before awaiting any of them
 * (CompiledMapping.renderMany does): an adapter may evaluate concurrent calls together.
 *
 * An evaluation that runs longer than its time budget fails its record (default
 * TEMPLATE_TIMEOUT_MS, `--template-timeout`).
 */
export interface TemplateEngine {
  /** Syntax check: undefined when valid, otherwise "<line>:<col>-<col> <message>" as go-jsonnet prints it. */
  check(content: string): Promise<string | undefined>;
  /** Rejects with a TemplateError (kind `invalid`) when the content does not pass check(). */
  compile(content: string): Promise<CompiledTemplate>;
}

export interface CompiledTemplate {
  /** Evaluates to the compact JSON text of the result; rejects with a TemplateError. */
  evaluate(record: RecordContext): Promise<string>;
  /**
   * The same evaluation, returned at once (throws the TemplateError), for an engine that
   * evaluates in the calling thread: a mapping then renders its rows without a promise per
   * record and column.
   */
  evaluateSync?(record: RecordContext): string;
}

/**
 * A record plus lazily computed views of it, shared by every column of every sink
 * (implementation: columns/record-context.ts, createRecordContext()).
 */
export interface RecordContext {
  readonly record: IngestRecord;
  /** Parsed body (JSON or form); throws a MappingError (no column) for unsupported content or a bad body. */
  parsedBody(): JsonValue;
  /**
   * The value at a body path (undefined: not there), as lookupPath on parsedBody() gives it;
   * throws as parsedBody() for a body that cannot be parsed. Cheaper than the whole tree when a
   * few fields are read (columns/json-index.ts).
   */
  bodyValue(path: BodyPath): JsonValue | undefined;
  /**
   * The value at a body path as a `path` column writes it: a string's text when `rawString`,
   * otherwise its compact JSON (stringifyJson); undefined when not there; throws as bodyValue().
   */
  bodyText(path: BodyPath, rawString: boolean): string | undefined;
  /** The JSON object body's member index (columns/json-index.ts); undefined when the body has none. */
  bodyIndex(): JsonIndex | undefined;
  /** The body decoded as UTF-8. */
  bodyString(): string;
  /** [canonical name, first value] pairs, sorted by name. */
  headerEntries(): ReadonlyArray<readonly [string, string]>;
  /** One header by canonical name. */
  header(canonicalName: string): string | undefined;
  /** The `headers` column / `Header()` value: compact JSON, sorted keys. */
  headersJson(): string;
  /** `HeaderStr()`: sorted `Name: value\n` lines. */
  headerStr(): string;
  /** Receive time as `2006-01-02T15:04:05.000Z` (the `datetime` column, `Now()`). */
  datetime(): string;
}

/**
 * A template that failed: `invalid` at compile time (the static error as check() prints it),
 * otherwise the failure of one evaluation with the message a user sees (no "RUNTIME ERROR"
 * prefix, no stack trace), e.g. `path "a.b" not found in the body`.
 */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly kind: MappingErrorKind | 'invalid' = 'template',
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}
