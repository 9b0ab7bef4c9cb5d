/**
 * A sink's columns compiled once (per sink version) into a row renderer.
 *
 *   const mapping = await compileMapping(sink.table.mapping.columns, engine);
 *   const ctx = createRecordContext(record);          // once per record, shared by all sinks
 *   const row = await mapping.render(ctx);            // string[] or rejects with MappingError
 *   const rows = await mapping.renderMany(ctxs);      // per record: string[] | MappingError
 *
 * Mappings without template columns are synchronous (`isSync`, `renderSync`). Template columns
 * are evaluated through the TemplateEngine port; renderMany starts every evaluation of the
 * batch before awaiting, so an engine can evaluate them together.
 */
import type { Column } from '../../model/definition.js';
import { TemplateError, type CompiledTemplate, type RecordContext, type TemplateEngine } from '../template-engine.js';
import { MappingError } from './errors.js';
import {
  compilePathColumn,
  renderBody,
  renderDatetime,
  renderHeaders,
  renderIp,
  renderPath,
  renderUuid,
} from './renderers.js';

type SyncRenderer = (ctx: RecordContext) => string;

interface TemplateRenderer {
  readonly template: CompiledTemplate;
  readonly rawString: boolean;
}

type ColumnRenderer = SyncRenderer | TemplateRenderer;

export interface CompiledMapping {
  readonly columns: readonly Column[];
  readonly columnNames: readonly string[];
  /** No template column: renderSync() may be used. */
  readonly isSync: boolean;
  /** Renders one row; throws a MappingError naming the column. Only when isSync. */
  renderSync(ctx: RecordContext): string[];
  /** Renders one row; rejects with a MappingError naming the first failing column. */
  render(ctx: RecordContext): Promise<string[]>;
  /** Renders a batch; one entry per record, in order: the row or why it failed. */
  renderMany(ctxs: readonly RecordContext[]): Promise<Array<string[] | MappingError>>;
}

/** The message the API prints (it adds the final period): `Column "x" template is invalid: <error>`. */
export async function validateMapping(
  columns: readonly Column[],
  engine: TemplateEngine,
): Promise<string | undefined> {
  for (const c of columns) {
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
  const renderers = await Promise.all(columns.map((c) => compileColumn(c, engine)));
  return new Mapping(columns, renderers);
}

async function compileColumn(c: Column, engine: TemplateEngine | undefined): Promise<ColumnRenderer> {
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
    case 'template': {
      if (c.template?.language !== 'jsonnet') {
        throw new MappingError(
          `unsupported language "${String(c.template?.language)}", only "jsonnet" is supported`,
          'template',
          c.name,
        );
      }
      if (engine === undefined) throw new Error(`column "${c.name}" is a template but no TemplateEngine is configured`);
      try {
        const template = await engine.compile(c.template.content);
        return { template, rawString: c.rawString === true };
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        throw new MappingError(`template is invalid: ${msg}`, 'template', c.name);
      }
    }
    default:
      throw new Error(`unknown column type "${String((c as Column).type)}"`);
  }
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
  readonly isSync: boolean;

  constructor(
    readonly columns: readonly Column[],
    private readonly renderers: readonly ColumnRenderer[],
  ) {
    this.columnNames = columns.map((c) => c.name);
    this.isSync = renderers.every((r) => typeof r === 'function');
  }

  renderSync(ctx: RecordContext): string[] {
    if (!this.isSync) throw new Error('renderSync() on a mapping with template columns');
    const rs = this.renderers as readonly SyncRenderer[];
    const row = new Array<string>(rs.length);
    for (let i = 0; i < rs.length; i++) {
      try {
        row[i] = rs[i](ctx);
      } catch (e) {
        throw asMappingError(e, this.columnNames[i]);
      }
    }
    return row;
  }

  render(ctx: RecordContext): Promise<string[]> {
    if (this.isSync) {
      try {
        return Promise.resolve(this.renderSync(ctx));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.renderAsync(ctx).then((r) => (r instanceof MappingError ? Promise.reject(r) : r));
  }

  renderMany(ctxs: readonly RecordContext[]): Promise<Array<string[] | MappingError>> {
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
    // Start every evaluation before awaiting any: the engine batches them.
    return Promise.all(ctxs.map((ctx) => this.renderAsync(ctx)));
  }

  /** Resolves to the row or to the MappingError of the first failing column (in column order). */
  private async renderAsync(ctx: RecordContext): Promise<string[] | MappingError> {
    const rs = this.renderers;
    const row = new Array<string>(rs.length);
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
              row[i] = templateValue(json, r.rawString);
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
