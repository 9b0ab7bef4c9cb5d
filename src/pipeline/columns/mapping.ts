/**
 * A sink's columns compiled once (per sink version) into a row renderer.
 *
 *   const mapping = await compileMapping(sink.table.mapping.columns, engine);
 *   const ctx = createRecordContext(record);          // once per record, shared by all sinks
 *   const row = await mapping.render(ctx);            // MappedRow (string | null)[] or rejects with MappingError
 *   const rows = await mapping.renderMany(ctxs);      // per record: MappedRow | MappingError
 *
 * Mappings without template columns are synchronous (`isSync`, `renderSync`). Template columns
 * are evaluated through the TemplateEngine port; renderMany starts every evaluation of the
 * batch before awaiting, so an engine can evaluate them together.
 *
 * A row holds each column's CSV text, or null (NULL) in a typed column (typed-columns.ts);
 * `quotedEmpty` says which columns write an empty string as `""` so that the table tells it
 * from NULL (csv-rows.ts).
 */
import type { Column } from '../../model/definition.js';
import { primaryKeyOf } from '../../model/columns.js';
import { TemplateError, type CompiledTemplate, type RecordContext, type TemplateEngine } from '../template-engine.js';
import { MappingError } from './errors.js';
import { checkedKeyValue, keyColumnBytes, renderBodyJson, typedPathRenderer, typedTemplateFinish, type TemplateFinish } from './typed-columns.js';
import { converterFor } from './typed-values.js';
import {
  compilePathColumn,
  renderBody,
  renderDatetime,
  renderHeaders,
  renderIp,
  renderPath,
  renderUuid,
} from './renderers.js';

/** A rendered row: each column's CSV text; null is NULL (typed columns only). */
export type MappedRow = Array<string | null>;

type SyncRenderer = (ctx: RecordContext) => string | null;

interface TemplateRenderer {
  readonly template: CompiledTemplate;
  /** The template's compact JSON as the column's value. */
  readonly finish: TemplateFinish;
}

type ColumnRenderer = SyncRenderer | TemplateRenderer;

export interface CompiledMapping {
  readonly columns: readonly Column[];
  readonly columnNames: readonly string[];
  /**
   * Per column, whether an empty string is written `""` (typed columns, where an empty field
   * is NULL); undefined when no column is typed (every empty field is an empty string).
   */
  readonly quotedEmpty: readonly boolean[] | undefined;
  /** No template column: renderSync() may be used. */
  readonly isSync: boolean;
  /** Renders one row; throws a MappingError naming the column. Only when isSync. */
  renderSync(ctx: RecordContext): MappedRow;
  /** Renders one row; rejects with a MappingError naming the first failing column. */
  render(ctx: RecordContext): Promise<MappedRow>;
  /** Renders a batch; one entry per record, in order: the row or why it failed. */
  renderMany(ctxs: readonly RecordContext[]): Promise<Array<MappedRow | MappingError>>;
}

/**
 * The message the API prints (it adds the final period): `Column "x" template is invalid: <error>`,
 * or `Column "x" defaultValue is invalid: <why>` for a typed path column's default that does not
 * convert.
 */
export async function validateMapping(
  columns: readonly Column[],
  engine: TemplateEngine,
): Promise<string | undefined> {
  for (const c of columns) {
    if (c.type === 'path' && c.dataType !== undefined && typeof c.defaultValue === 'string') {
      try {
        converterFor(c.dataType)(c.defaultValue);
      } catch (e) {
        if (e instanceof MappingError) return `Column "${c.name}" defaultValue is invalid: ${e.reason}`;
        throw e;
      }
    }
    if (c.type !== 'template') continue;
    const language = c.template?.language;
    if (language !== 'jsonnet') {
      return `Column "${c.name}" template language "${String(language)}" is not supported, only "jsonnet" is supported`;
    }
    const err = await engine.check(c.template?.content ?? '');
    if (err !== undefined) return `Column "${c.name}" template is invalid: ${err}`;
  }
  return undefined;
}

/**
 * Compiles the columns. Rejects with a MappingError (kind `template`, naming the column) when
 * a template does not compile, and with an Error when templates are present but no engine is.
 */
export async function compileMapping(columns: readonly Column[], engine?: TemplateEngine): Promise<CompiledMapping> {
  const keyBytes = keyColumnBytes(primaryKeyOf(columns).length);
  const renderers = await Promise.all(columns.map(async (c) => {
    const r = await compileColumn(c, engine);
    return c.primaryKey === true ? keyRenderer(r, keyBytes) : r;
  }));
  return new Mapping(columns, renderers);
}

/** A primary key column's renderer: its value checked (a value, not too long: checkedKeyValue). */
function keyRenderer(r: ColumnRenderer, maxBytes: number): ColumnRenderer {
  if (typeof r === 'function') return (ctx) => checkedKeyValue(r(ctx), maxBytes);
  const { template, finish } = r;
  return { template, finish: (json) => checkedKeyValue(finish(json), maxBytes) };
}

async function compileColumn(c: Column, engine: TemplateEngine | undefined): Promise<ColumnRenderer> {
  if (c.dataType !== undefined) {
    switch (c.type) {
      case 'path':
        return typedPathRenderer(c, c.dataType);
      case 'body':
        if (c.dataType === 'JSON') return renderBodyJson;
        break;
      case 'template': {
        const { template } = await compileTemplateColumn(c, engine);
        return { template, finish: typedTemplateFinish(c.dataType) };
      }
      default:
        // uuid, ip, datetime, headers: the untyped column's text is the type's text already.
        break;
    }
  }
  switch (c.type) {
    case 'uuid':
      return renderUuid;
    case 'datetime':
      return renderDatetime;
    case 'ip':
      return renderIp;
    case 'body':
      return renderBody;
    case 'headers':
      return renderHeaders;
    case 'path': {
      const compiled = compilePathColumn({ path: c.path ?? '', defaultValue: c.defaultValue, rawString: c.rawString });
      return (ctx) => renderPath(ctx, compiled);
    }
    case 'template':
      return compileTemplateColumn(c, engine);
    default:
      throw new Error(`unknown column type "${String((c as Column).type)}"`);
  }
}

/** An untyped template column: its JSON as the CSV field, a string unquoted when rawString. */
async function compileTemplateColumn(c: Column, engine: TemplateEngine | undefined): Promise<TemplateRenderer> {
  if (c.template?.language !== 'jsonnet') {
    throw new MappingError(
      `unsupported language "${String(c.template?.language)}", only "jsonnet" is supported`,
      'template',
      c.name,
    );
  }
  if (engine === undefined) throw new Error(`column "${c.name}" is a template but no TemplateEngine is configured`);
  let template: CompiledTemplate;
  try {
    template = await engine.compile(c.template.content);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new MappingError(`template is invalid: ${msg}`, 'template', c.name);
  }
  const rawString = c.rawString === true;
  return { template, finish: (json) => templateValue(json, rawString) };
}

function asMappingError(e: unknown, column: string): MappingError {
  if (e instanceof MappingError) return e.column === column ? e : e.forColumn(column);
  if (e instanceof TemplateError) {
    return new MappingError(e.message, e.kind === 'invalid' ? 'template' : e.kind, column);
  }
  return new MappingError(e instanceof Error ? e.message : String(e), 'internal', column);
}

/** A template's compact JSON as the CSV field: a JSON string unquoted when rawString. */
function templateValue(json: string, rawString: boolean): string {
  if (rawString && json.charCodeAt(0) === 0x22) return JSON.parse(json) as string;
  return json;
}

class Mapping implements CompiledMapping {
  readonly columnNames: readonly string[];
  readonly quotedEmpty: readonly boolean[] | undefined;
  readonly isSync: boolean;
  /**
   * Every template evaluates in this thread (CompiledTemplate.evaluateSync): rows are rendered
   * at once, without a promise per record and template. The mapping still is not `isSync`:
   * its templates run Jsonnet, which the batch renderer guards and budgets chunk by chunk.
   */
  private readonly inThread: boolean;

  constructor(
    readonly columns: readonly Column[],
    private readonly renderers: readonly ColumnRenderer[],
  ) {
    this.columnNames = columns.map((c) => c.name);
    this.quotedEmpty = columns.some((c) => c.dataType !== undefined) ? columns.map((c) => c.dataType !== undefined) : undefined;
    this.isSync = renderers.every((r) => typeof r === 'function');
    this.inThread = renderers.every((r) => typeof r === 'function' || r.template.evaluateSync !== undefined);
  }

  renderSync(ctx: RecordContext): MappedRow {
    if (!this.isSync) throw new Error('renderSync() on a mapping with template columns');
    const rs = this.renderers as readonly SyncRenderer[];
    const row: MappedRow = new Array<string | null>(rs.length);
    for (let i = 0; i < rs.length; i++) {
      try {
        row[i] = rs[i](ctx);
      } catch (e) {
        throw asMappingError(e, this.columnNames[i]);
      }
    }
    return row;
  }

  render(ctx: RecordContext): Promise<MappedRow> {
    if (this.isSync) {
      try {
        return Promise.resolve(this.renderSync(ctx));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    const r = this.inThread ? this.renderInThread(ctx) : undefined;
    if (r !== undefined) return r instanceof MappingError ? Promise.reject(r) : Promise.resolve(r);
    return this.renderAsync(ctx).then((r) => (r instanceof MappingError ? Promise.reject(r) : r));
  }

  renderMany(ctxs: readonly RecordContext[]): Promise<Array<MappedRow | MappingError>> {
    if (this.isSync) {
      return Promise.resolve(
        ctxs.map((ctx) => {
          try {
            return this.renderSync(ctx);
          } catch (e) {
            return e instanceof MappingError ? e : asMappingError(e, '');
          }
        }),
      );
    }
    if (this.inThread) return Promise.resolve(ctxs.map((ctx) => this.renderInThread(ctx)));
    // Start every evaluation before awaiting any: the engine batches them.
    return Promise.all(ctxs.map((ctx) => this.renderAsync(ctx)));
  }

  /** The row, or the MappingError of the first failing column (in column order); every template evaluates in this thread. */
  private renderInThread(ctx: RecordContext): MappedRow | MappingError {
    const rs = this.renderers;
    const row: MappedRow = new Array<string | null>(rs.length);
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i];
      try {
        row[i] = typeof r === 'function' ? r(ctx) : r.finish(r.template.evaluateSync!(ctx));
      } catch (e) {
        return asMappingError(e, this.columnNames[i]);
      }
    }
    return row;
  }

  /** Resolves to the row or to the MappingError of the first failing column (in column order). */
  private async renderAsync(ctx: RecordContext): Promise<MappedRow | MappingError> {
    const rs = this.renderers;
    const row: MappedRow = new Array<string | null>(rs.length);
    const errors: Array<MappingError | undefined> = [];
    const pending: Array<Promise<void>> = [];
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i];
      if (typeof r === 'function') {
        try {
          row[i] = r(ctx);
        } catch (e) {
          // Later columns cannot come first; earlier templates still may.
          errors[i] = asMappingError(e, this.columnNames[i]);
          break;
        }
      } else {
        pending.push(
          r.template.evaluate(ctx).then(
            (json) => {
              try {
                row[i] = r.finish(json);
              } catch (e) {
                errors[i] = asMappingError(e, this.columnNames[i]);
              }
            },
            (e: unknown) => {
              errors[i] = asMappingError(e, this.columnNames[i]);
            },
          ),
        );
      }
    }
    if (pending.length > 0) await Promise.all(pending);
    for (const e of errors) if (e !== undefined) return e;
    return row;
  }
}
