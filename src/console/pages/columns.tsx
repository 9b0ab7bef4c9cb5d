/**
 * The columns of a sink's mapping: every column type the Stream API accepts
 * (src/model/definition.ts COLUMN_TYPES, src/api/stream/schemas.ts columnSchema) with its
 * options, added, removed and reordered with buttons (keyboard: the moved column's button keeps
 * the focus), and the Jsonnet template editor with a line-number gutter that points at the line
 * and column of the API's syntax error.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { ErrorText } from '../widgets/common';

export type { ColumnType } from '../../contract/stream-sources';
import { DATA_TYPES_OF, KEY_COLUMN_TYPES, type BaseType, type Column, type ColumnBody, type ColumnType } from '../../contract/stream-sources';

/** A column being edited: every option kept while the type changes; `key` identifies it in the list. */
export interface ColumnDraft {
  key: number;
  type: ColumnType;
  name: string;
  path: string;
  hasDefault: boolean;
  defaultValue: string;
  rawString: boolean;
  content: string;
  /** The column's data type (none: the untyped string column) and whether it is part of the primary key; an existing table refuses a change of either (the API's 400, shown at the column). */
  dataType?: BaseType;
  primaryKey?: boolean;
}

export const COLUMN_TYPES: { type: ColumnType; label: string; hint: string }[] = [
  { type: 'uuid', label: 'uuid', hint: 'A new random UUID for each record.' },
  { type: 'datetime', label: 'datetime', hint: 'When the record was received (UTC, RFC 3339 with milliseconds).' },
  { type: 'ip', label: 'ip', hint: 'The client\'s IP address (X-Forwarded-For / X-Real-Ip when a proxy sets them).' },
  { type: 'body', label: 'body', hint: 'The raw request body, as text.' },
  { type: 'headers', label: 'headers', hint: 'The request headers as a JSON object (first value of each).' },
  { type: 'path', label: 'path', hint: 'A value from the JSON (or form) body, by its path.' },
  { type: 'template', label: 'template', hint: 'A Jsonnet expression over the record.' },
];

let nextKey = 1;

export function newColumn(type: ColumnType, name: string): ColumnDraft {
  return { key: nextKey++, type, name, path: '', hasDefault: false, defaultValue: '', rawString: false, content: '' };
}

export function draftOf(c: Column): ColumnDraft {
  return {
    key: nextKey++,
    type: c.type,
    name: c.name,
    path: c.path ?? '',
    hasDefault: c.defaultValue !== undefined,
    defaultValue: c.defaultValue ?? '',
    rawString: c.rawString === true,
    content: c.template?.content ?? '',
    ...(c.dataType !== undefined ? { dataType: c.dataType } : {}),
    ...(c.primaryKey === true ? { primaryKey: true } : {}),
  };
}

/** The column as the API takes it: only the fields of its type, and its data type and key flag when set. */
export function apiColumn(d: ColumnDraft): ColumnBody {
  const typed = { ...(d.dataType !== undefined ? { dataType: d.dataType } : {}), ...(d.primaryKey === true ? { primaryKey: true } : {}) };
  switch (d.type) {
    case 'path':
      return { type: 'path', name: d.name, path: d.path, ...(d.hasDefault ? { defaultValue: d.defaultValue } : {}), rawString: d.rawString, ...typed };
    case 'template':
      return { type: 'template', name: d.name, template: { language: 'jsonnet', content: d.content }, rawString: d.rawString, ...typed };
    default:
      return { type: d.type, name: d.name, ...typed };
  }
}

/** Errors of one column: next to its name, or next to its template (with the position of a syntax error). */
export interface ColumnErrors {
  name?: string;
  path?: string;
  template?: string;
  other?: string;
}

/** `... template is invalid: 3:7-9 ...` (or `Filter is invalid: ...`) -> {line: 3, column: 7} (also `(3:7)-(4:1)`). */
export function templatePosition(message: string | undefined): { line: number; column: number } | undefined {
  const m = message ? /(?:template|Filter) is invalid: \(?(\d+):(\d+)/.exec(message) : null;
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

interface EditorProps {
  columns: ColumnDraft[];
  onChange: (columns: ColumnDraft[]) => void;
  errors: Record<number, ColumnErrors>;
  readOnly: boolean;
}

/** The list of columns; each a fieldset named "Column <n>: <name>". */
export function ColumnsEditor({ columns, onChange, errors, readOnly }: EditorProps) {
  const listRef = useRef<HTMLOListElement>(null);
  // After a move, the same button of the moved column gets the focus (or the other one at an end).
  const focusAfter = useRef<{ key: number; action: 'up' | 'down' | 'name' } | undefined>(undefined);
  useEffect(() => {
    const want = focusAfter.current;
    if (!want || !listRef.current) return;
    focusAfter.current = undefined;
    const item = listRef.current.querySelector(`[data-column-key="${want.key}"]`);
    if (!item) return;
    const preferred = item.querySelector<HTMLElement>(want.action === 'name' ? 'input[name="column-name"]' : `button[data-move="${want.action}"]:not([disabled])`);
    (preferred ?? item.querySelector<HTMLElement>('button[data-move]:not([disabled])'))?.focus();
  });

  const update = (key: number, patch: Partial<ColumnDraft>) => onChange(columns.map((c) => (c.key === key ? { ...c, ...patch } : c)));
  const move = (index: number, by: -1 | 1) => {
    const next = [...columns];
    const [c] = next.splice(index, 1);
    next.splice(index + by, 0, c);
    focusAfter.current = { key: c.key, action: by < 0 ? 'up' : 'down' };
    onChange(next);
  };
  const remove = (index: number) => {
    const next = columns.filter((_, i) => i !== index);
    const neighbour = next[Math.min(index, next.length - 1)];
    if (neighbour) focusAfter.current = { key: neighbour.key, action: 'name' };
    onChange(next);
  };

  return (
    <ol class="columns" ref={listRef}>
      {columns.map((c, i) => (
        <li key={c.key} data-column-key={c.key}>
          <ColumnEditor
            column={c}
            index={i}
            count={columns.length}
            errors={errors[c.key] ?? {}}
            readOnly={readOnly}
            onUpdate={(patch) => update(c.key, patch)}
            onMove={(by) => move(i, by)}
            onRemove={() => remove(i)}
          />
        </li>
      ))}
    </ol>
  );
}

interface ColumnProps {
  column: ColumnDraft;
  index: number;
  count: number;
  errors: ColumnErrors;
  readOnly: boolean;
  onUpdate: (patch: Partial<ColumnDraft>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}

function ColumnEditor({ column: c, index, count, errors, readOnly, onUpdate, onMove, onRemove }: ColumnProps) {
  const id = `column-${c.key}`;
  const label = c.name || `column ${index + 1}`;
  const typeHint = COLUMN_TYPES.find((t) => t.type === c.type)?.hint;
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const checked = (e: Event) => (e.target as HTMLInputElement).checked;
  return (
    <fieldset class={`column panel${errors.name || errors.path || errors.template || errors.other ? ' has-error' : ''}`}>
      <legend>Column {index + 1}{c.name ? `: ${c.name}` : ''}</legend>
      <div class="column-head">
        <label class="field">
          Name
          <input name="column-name" value={c.name} readOnly={readOnly} maxLength={64} autoComplete="off" spellcheck={false}
            aria-invalid={errors.name ? true : undefined} aria-describedby={errors.name ? `${id}-name-error` : undefined}
            onInput={(e) => onUpdate({ name: value(e) })} />
        </label>
        <label class="field">
          Type
          <select name="column-type" value={c.type} disabled={readOnly} onChange={(e) => onUpdate(retyped(c, value(e) as ColumnType))}>
            {COLUMN_TYPES.map((t) => <option key={t.type} value={t.type}>{t.label}</option>)}
          </select>
        </label>
        {!readOnly && (
          <div class="column-buttons" role="group" aria-label={`Order of ${label}`}>
            <button type="button" class="small" data-move="up" disabled={index === 0} onClick={() => onMove(-1)} aria-label={`Move ${label} up`} title="Move up">↑ Up</button>
            <button type="button" class="small" data-move="down" disabled={index === count - 1} onClick={() => onMove(1)} aria-label={`Move ${label} down`} title="Move down">↓ Down</button>
            <button type="button" class="small danger" onClick={onRemove} disabled={count === 1} aria-label={`Remove ${label}`} title={count === 1 ? 'A sink needs at least one column' : 'Remove'}>Remove</button>
          </div>
        )}
      </div>
      <ErrorText error={errors.name} id={`${id}-name-error`} />
      <p class="hint">{typeHint}</p>
      {c.type === 'path' && (
        <div class="column-options">
          <label class="field">
            Path
            <span class="hint">Dot-separated path in the JSON body, e.g. <code>user.id</code> or <code>items[0].sku</code>; empty = the whole body.</span>
            <input name="column-path" value={c.path} readOnly={readOnly} autoComplete="off" spellcheck={false}
              aria-invalid={errors.path ? true : undefined} onInput={(e) => onUpdate({ path: value(e) })} />
            <ErrorText error={errors.path} />
          </label>
          <label class="check">
            <input type="checkbox" checked={c.hasDefault} disabled={readOnly} onChange={(e) => onUpdate({ hasDefault: checked(e) })} />
            Use a default value when the path is missing (otherwise the record fails to map)
          </label>
          {c.hasDefault && (
            <label class="field">
              Default value
              <input name="column-default" value={c.defaultValue} readOnly={readOnly} autoComplete="off" onInput={(e) => onUpdate({ defaultValue: value(e) })} />
            </label>
          )}
        </div>
      )}
      {c.type === 'template' && (
        <div class="column-options">
          <label class="field">
            Language
            <select name="column-language" value="jsonnet" disabled={readOnly}>
              <option value="jsonnet">Jsonnet</option>
            </select>
          </label>
          <TemplateEditor id={`${id}-template`} value={c.content} error={errors.template} readOnly={readOnly} onInput={(content) => onUpdate({ content })} />
        </div>
      )}
      {(c.type === 'path' || c.type === 'template') && (
        <label class="check">
          <input type="checkbox" checked={c.rawString} disabled={readOnly} onChange={(e) => onUpdate({ rawString: checked(e) })} />
          Raw string: write a JSON string without its quotes
        </label>
      )}
      <div class="column-options">
        <label class="field">
          Data type
          <select name="column-data-type" value={c.dataType ?? ''} disabled={readOnly}
            onChange={(e) => {
              const dataType = (value(e) || undefined) as BaseType | undefined;
              onUpdate({ dataType, ...(dataType === 'JSON' ? { primaryKey: false } : {}) });
            }}>
            <option value="">untyped text (never NULL)</option>
            {DATA_TYPES_OF[c.type].map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
        {KEY_COLUMN_TYPES.includes(c.type) && c.dataType !== 'JSON' && (
          <label class="check">
            <input type="checkbox" name="column-primary-key" checked={c.primaryKey === true} disabled={readOnly} onChange={(e) => onUpdate({ primaryKey: checked(e) })} />
            Part of the primary key: an import replaces the row of the same key (the last record wins)
          </label>
        )}
      </div>
      <ErrorText error={errors.other} />
    </fieldset>
  );
}

/** A column given another column type: a data type or key flag the new type cannot have is dropped. */
function retyped(c: ColumnDraft, type: ColumnType): Partial<ColumnDraft> {
  return {
    type,
    ...(c.dataType !== undefined && !DATA_TYPES_OF[type].includes(c.dataType) ? { dataType: undefined } : {}),
    ...(c.primaryKey && !KEY_COLUMN_TYPES.includes(type) ? { primaryKey: false } : {}),
  };
}

/**
 * A monospace textarea with a line-number gutter. A syntax error of the API (`3:7 ...`) marks
 * its line in the gutter and is shown under the field with the line's text and a caret under
 * the column; "Go to line 3, column 7" puts the cursor there.
 */
export function TemplateEditor({ id, value, error, readOnly, onInput, label = 'Template', name = 'column-template', hint }: {
  id: string; value: string; error?: string; readOnly: boolean; onInput: (v: string) => void;
  /** The field's label, its form name and its hint (a template column's by default; the sink's filter has its own). */
  label?: string; name?: string; hint?: ComponentChildren;
}) {
  const areaRef = useRef<HTMLTextAreaElement>(null);
  const gutterRef = useRef<HTMLDivElement>(null);
  const lines = value.split('\n');
  const position = templatePosition(error);
  const errorLine = position ? lines[position.line - 1] : undefined;
  const syncScroll = () => {
    if (gutterRef.current && areaRef.current) gutterRef.current.scrollTop = areaRef.current.scrollTop;
  };
  const goTo = () => {
    const area = areaRef.current;
    if (!area || !position) return;
    let offset = 0;
    for (let i = 0; i < position.line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    offset += Math.min(position.column - 1, (lines[position.line - 1] ?? '').length);
    area.focus();
    area.setSelectionRange(offset, offset);
  };
  return (
    <div class="field template-field">
      <label for={id}>{label}</label>
      <span class="hint" id={`${id}-hint`}>
        {hint ?? <>Jsonnet, e.g. <code>Body("user.id")</code>, <code>Header("X-Request-Id", "")</code>, <code>std.join(" ", [Body("a"), Body("b")])</code>.</>}
        {' '}Globals: <code>Body()</code>, <code>Body(path, default)</code>, <code>BodyStr()</code>, <code>Header(name)</code>, <code>HeaderStr()</code>, <code>Ip()</code>, <code>Now(format)</code>.
      </span>
      <div class={`code-editor${position ? ' has-error' : ''}`}>
        <div class="gutter" ref={gutterRef} aria-hidden="true">
          {lines.map((_, i) => (
            <div key={i} class={position?.line === i + 1 ? 'error-line' : undefined}>{i + 1}</div>
          ))}
        </div>
        <textarea
          id={id}
          name={name}
          ref={areaRef}
          value={value}
          readOnly={readOnly}
          wrap="off"
          spellcheck={false}
          autoComplete="off"
          rows={Math.min(Math.max(lines.length + 1, 4), 16)}
          aria-invalid={error ? true : undefined}
          aria-describedby={`${id}-hint${error ? ` ${id}-error` : ''}`}
          onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)}
          onScroll={syncScroll}
        />
      </div>
      {error && (
        <div class="template-error" id={`${id}-error`}>
          <p class="error" role="alert">{error}</p>
          {position && (
            <div class="caret-marker">
              <button type="button" class="small" onClick={goTo}>Go to line {position.line}, column {position.column}</button>
              {errorLine !== undefined && (
                <pre aria-label={`Line ${position.line}, column ${position.column}`}>
                  <span class="line-no">{position.line} | </span>{errorLine}{'\n'}
                  <span class="line-no">{' '.repeat(String(position.line).length)} | </span>{caretIndent(errorLine, position.column)}<span class="caret">^</span>
                </pre>
              )}
            </div>
          )}
        </div>
      )}
    </div>
  );
}

/** Spaces (tabs kept, so the caret lines up) up to the 1-based column. */
function caretIndent(line: string, column: number): string {
  return [...line.slice(0, Math.max(0, column - 1))].map((ch) => (ch === '\t' ? '\t' : ' ')).join('');
}
