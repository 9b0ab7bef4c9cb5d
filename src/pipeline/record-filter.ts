/**
 * A sink's record filter (`table.mapping.filter`, model/definition.ts MappingFilter): a Jsonnet
 * expression over the record, with the globals template columns have (Body(), Header(), …),
 * compiled once per sink version and evaluated once per record before the sink's columns.
 * `true` maps the record; `false` skips it (filtered: neither a row nor a failure); any other
 * result, or an error, is the record's mapping failure, whose reason says what the filter
 * returned or how it failed (kept, reprocessable and replayable like any other failure).
 */
import type { MappingFilter } from '../model/definition.js';
import { MappingError, type MappingErrorKind } from './columns/errors.js';
import { TemplateError, type CompiledTemplate, type RecordContext, type TemplateEngine } from './template-engine.js';

/** A result shown in a failure's reason is cut to this many characters (a filter may return a whole body). */
const SHOWN_RESULT_CHARS = 100;

/**
 * A record the filter could not decide: the reason names the filter (no column), e.g.
 * `Filter returned "yes", not true or false.` or `Filter failed: path "a" not found in the body.`
 */
export class FilterError extends MappingError {
  constructor(reason: string, kind: MappingErrorKind) {
    super(reason.endsWith('.') ? reason : `${reason}.`, kind);
    this.name = 'FilterError';
  }
}

export interface CompiledFilter {
  /**
   * One answer per record, in order: whether it is kept, or why the filter could not say. Every
   * evaluation starts before any is awaited (TemplateEngine: the engine may batch them).
   */
  testMany(ctxs: readonly RecordContext[]): Promise<Array<boolean | FilterError>>;
}

/** The message the API answers (400) for a filter that does not compile, or undefined when it does. */
export async function checkFilter(filter: MappingFilter, engine: TemplateEngine): Promise<string | undefined> {
  if (filter.language !== 'jsonnet') return `Filter language "${String(filter.language)}" is not supported, only "jsonnet" is supported`;
  const err = await engine.check(filter.content);
  return err === undefined ? undefined : `Filter is invalid: ${err}`;
}

/** Compiles the filter; rejects with a FilterError (`Filter is invalid: …`) when it does not compile. */
export async function compileFilter(filter: MappingFilter, engine: TemplateEngine): Promise<CompiledFilter> {
  if (filter.language !== 'jsonnet') throw new FilterError(`Filter language "${String(filter.language)}" is not supported`, 'template');
  let template: CompiledTemplate;
  try {
    template = await engine.compile(filter.content);
  } catch (e) {
    throw new FilterError(`Filter is invalid: ${e instanceof Error ? e.message : String(e)}`, 'template');
  }
  const evaluateSync = template.evaluateSync?.bind(template);
  if (evaluateSync) return { testMany: async (ctxs) => ctxs.map((ctx) => testInThread(evaluateSync, ctx)) };
  return {
    testMany: (ctxs) => Promise.all(ctxs.map((ctx) => template.evaluate(ctx).then(verdict, failed))),
  };
}

/** The verdict of an engine that evaluates in this thread: no promise per record. */
function testInThread(evaluateSync: (ctx: RecordContext) => string, ctx: RecordContext): boolean | FilterError {
  let json: string;
  try {
    json = evaluateSync(ctx);
  } catch (e) {
    return failed(e);
  }
  return verdict(json);
}

/** The evaluation's compact JSON as the record's verdict. */
function verdict(json: string): boolean | FilterError {
  if (json === 'true') return true;
  if (json === 'false') return false;
  const shown = json.length > SHOWN_RESULT_CHARS ? `${json.slice(0, SHOWN_RESULT_CHARS)}…` : json;
  return new FilterError(`Filter returned ${shown}, not true or false`, 'template');
}

function failed(e: unknown): FilterError {
  if (e instanceof TemplateError) return new FilterError(`Filter failed: ${e.message}`, e.kind === 'invalid' ? 'template' : e.kind);
  if (e instanceof MappingError) return new FilterError(`Filter failed: ${e.reason}`, e.kind);
  return new FilterError(`Filter failed: ${e instanceof Error ? e.message : String(e)}`, 'internal');
}
