/**
 * The mapping editor of a sink: create (POST .../sinks) or change (PATCH .../sinks/<id>); both
 * answer tasks. Obvious mistakes are caught here (a name, a table, column names); everything
 * else the API judges, and its message is shown next to the field it is about: a template's
 * syntax error next to the template (with its line and column), a filter's next to the filter,
 * a table that cannot take a column (`tableSchemaMismatch`: another type) next to that column,
 * or next to the table. A read-only token sees the same form, read only, without buttons.
 */
import { useState } from 'preact/hooks';
import { BRANCH, runTask } from '../api';
import { session } from '../session';
import { go } from '../router';
import { ErrorText } from '../widgets/common';
import { ColumnsEditor, TemplateEditor, apiColumn, draftOf, newColumn, COLUMN_TYPES, type ColumnDraft, type ColumnErrors, type ColumnType } from './columns';
// The API's own id normalisation (pure, no dependencies): the placeholder is the id it will derive.
import { normalizeId } from '../../model/ids';

// The API's own model (pure, no dependencies): the signals a sink may take.
import { SIGNALS, type Signal } from '../../model/definition';
export { SIGNALS, type Signal };
import type { SinkCreate, SinkUpdate, SinkView, SourceView } from '../../contract/stream-sources';
import { ProposeMapping } from './sink-proposal';

interface Draft {
  name: string;
  sinkId: string;
  description: string;
  tableId: string;
  columns: ColumnDraft[];
  /** The record filter's Jsonnet; empty: no filter (every record is written). */
  filter: string;
  allowedSignals: Signal[];
  changeDescription: string;
}

interface Errors {
  name?: string;
  sinkId?: string;
  description?: string;
  tableId?: string;
  columns?: string;
  filter?: string;
  signals?: string;
  form?: string;
  column: Record<number, ColumnErrors>;
}

const NO_ERRORS: Errors = { column: {} };

function initialDraft(sink: SinkView | undefined): Draft {
  if (sink) {
    return {
      name: sink.name,
      sinkId: sink.sinkId,
      description: sink.description,
      tableId: sink.table.tableId,
      columns: sink.table.mapping.columns.map(draftOf),
      filter: sink.table.mapping.filter?.content ?? '',
      allowedSignals: sink.allowedSignals ?? [],
      changeDescription: '',
    };
  }
  return {
    name: '',
    sinkId: '',
    description: '',
    tableId: '',
    columns: [newColumn('uuid', 'id'), newColumn('datetime', 'received_at'), newColumn('body', 'body')],
    filter: '',
    allowedSignals: [],
    changeDescription: '',
  };
}


/** Client-side checks of what is obviously missing; the API judges the rest. */
/** The table a new sink writes to when its table id is left empty: in.c-<source>.<sink>. */
export function defaultTableId(sourceId: string, d: Pick<Draft, 'sinkId' | 'name'>): string {
  return `in.c-${sourceId}.${d.sinkId.trim() || normalizeId(d.name) || 'events'}`;
}

function check(d: Draft, creating: boolean): Errors {
  const errors: Errors = { column: {} };
  if (d.name.trim() === '') errors.name = 'Enter a name.';
  // A new sink's empty table id is the default (defaultTableId); an existing sink keeps one.
  if (!creating && d.tableId.trim() === '') errors.tableId = 'Enter the table id, e.g. in.c-events.raw.';
  if (d.columns.length === 0) errors.columns = 'A sink needs at least one column.';
  const seen = new Set<string>();
  for (const c of d.columns) {
    const e: ColumnErrors = {};
    if (c.name.trim() === '') e.name = 'Enter the column\'s name.';
    else if (seen.has(c.name)) e.name = `Column "${c.name}" is defined more than once: column names must be unique.`;
    seen.add(c.name);
    if (c.type === 'template' && c.content.trim() === '') e.template = 'Enter a Jsonnet template.';
    if (Object.keys(e).length > 0) errors.column[c.key] = e;
  }
  return errors;
}

function hasErrors(e: Errors): boolean {
  return Boolean(e.name || e.sinkId || e.description || e.tableId || e.columns || e.filter || e.signals || e.form || Object.keys(e.column).length > 0);
}

/**
 * Where an API message belongs: the filter (`Filter is invalid: ...`,
 * `body.table.mapping.filter...`), a column (`Column "x" ...`, `Invalid value for column "x"`,
 * `body.table.mapping.columns[2].name`), the table (its id, its columns), the name, the id,
 * the description; else the form.
 */
export function placeError(message: string, columns: ColumnDraft[]): Errors {
  const errors: Errors = { column: {} };
  if (/^Filter\b|mapping\.filter/.test(message)) {
    errors.filter = message;
    return errors;
  }
  const byName = /columns? (?:name )?"([^"]+)"/i.exec(message);
  const byIndex = /columns\[(\d+)\](?:\.(\w+))?/.exec(message);
  const target = byName ? columns.find((c) => c.name === byName[1]) : byIndex ? columns[Number(byIndex[1])] : undefined;
  if (target) {
    const field = byIndex?.[2];
    const e: ColumnErrors = {};
    if (/template/i.test(message) && target.type === 'template') e.template = message;
    else if (field === 'name' || /more than once|listed twice|letter case|column name/i.test(message)) e.name = message;
    else if (field === 'path' || (/"path"/.test(message) && target.type === 'path')) e.path = message;
    else e.other = message;
    errors.column[target.key] = e;
  } else if (/body\.table\.mapping\.columns|columns per sink|mapping/i.test(message)) errors.columns = message;
  else if (/allowedSignals/.test(message)) errors.signals = message;
  else if (/\btable\b|tableId|bucket/i.test(message)) errors.tableId = message;
  else if (/body\.name\b/.test(message)) errors.name = message;
  else if (/body\.sinkId|sink id|already exists/i.test(message)) errors.sinkId = message;
  else if (/body\.description/.test(message)) errors.description = message;
  else errors.form = message;
  return errors;
}

export function SinkEditor({ source, sink, onSaved }: { source: SourceView; sink?: SinkView; onSaved?: () => Promise<void> }) {
  const readOnly = !session.canWrite();
  const creating = sink === undefined;
  const [draft, setDraft] = useState<Draft>(() => initialDraft(sink));
  const [errors, setErrors] = useState<Errors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const [newType, setNewType] = useState<ColumnType>('path');
  const set = (patch: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...patch }));
    setSaved(undefined);
  };
  const text = (e: Event) => (e.target as HTMLInputElement).value;

  const addColumn = () => {
    const names = new Set(draft.columns.map((c) => c.name));
    let n = draft.columns.length + 1;
    while (names.has(`column_${n}`)) n++;
    const column = newColumn(newType, `column_${n}`);
    set({ columns: [...draft.columns, column] });
    // The new column's name, ready to be typed over.
    setTimeout(() => document.querySelector<HTMLInputElement>(`[data-column-key="${column.key}"] input[name="column-name"]`)?.select(), 0);
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (readOnly) return;
    const found = check(draft, creating);
    setErrors(found);
    setSaved(undefined);
    if (hasErrors(found)) return;
    setBusy(true);
    const columns = draft.columns.map(apiColumn);
    // An empty filter is none: the mapping is then the reference's (a saved filter is removed).
    const mapping = draft.filter.trim() ? { columns, filter: { language: 'jsonnet' as const, content: draft.filter } } : { columns };
    const signals = source.type === 'otlp' ? { allowedSignals: draft.allowedSignals } : {};
    try {
      if (creating) {
        const task = await runTask<{ outputs?: { sinkId?: string } }>('POST', `${BRANCH}/sources/${encodeURIComponent(source.sourceId)}/sinks`, {
          json: {
            ...(draft.sinkId.trim() ? { sinkId: draft.sinkId.trim() } : {}),
            name: draft.name,
            description: draft.description,
            type: 'table',
            table: { type: 'keboola', tableId: draft.tableId.trim() || defaultTableId(source.sourceId, draft), mapping },
            ...signals,
          } satisfies SinkCreate,
        });
        setErrors(NO_ERRORS);
        go('sources', source.sourceId, 'sinks', task.outputs?.sinkId ?? (draft.sinkId.trim() || normalizeId(draft.name)));
      } else {
        await runTask('PATCH', `${BRANCH}/sources/${encodeURIComponent(source.sourceId)}/sinks/${encodeURIComponent(sink.sinkId)}`, {
          json: {
            name: draft.name,
            description: draft.description,
            table: { type: 'keboola', tableId: draft.tableId.trim(), mapping },
            ...signals,
            ...(draft.changeDescription.trim() ? { changeDescription: draft.changeDescription.trim() } : {}),
          } satisfies SinkUpdate,
        });
        setErrors(NO_ERRORS);
        setDraft((d) => ({ ...d, changeDescription: '' }));
        setSaved('Saved: a new version of the sink is active; the next records are mapped with it.');
        await onSaved?.();
      }
    } catch (err) {
      setErrors(placeError(err instanceof Error ? err.message : String(err), draft.columns));
    } finally {
      setBusy(false);
    }
  };

  const toggleSignal = (signal: Signal, on: boolean) => {
    const next = on ? [...draft.allowedSignals, signal] : draft.allowedSignals.filter((s) => s !== signal);
    set({ allowedSignals: SIGNALS.filter((s) => next.includes(s)) });
  };

  return (
    <form class="stack sink-editor" onSubmit={submit} noValidate aria-label={creating ? 'New sink' : 'Mapping'}>
      {readOnly && <p class="muted">This token can read the sink, not change it.</p>}
      <div class="grid2">
        <label class="field">
          Name
          <span class="hint">1 to 40 characters.</span>
          <input name="name" value={draft.name} readOnly={readOnly} maxLength={40} autoComplete="off"
            aria-invalid={errors.name ? true : undefined} onInput={(e) => set({ name: text(e) })} />
          <ErrorText error={errors.name} />
        </label>
        {creating && (
          <label class="field">
            Sink id
            <span class="hint">Optional: made from the name when empty (letters, digits and dashes, at most 48).</span>
            <input name="sinkId" value={draft.sinkId} placeholder={normalizeId(draft.name)} maxLength={48} autoComplete="off" spellcheck={false}
              aria-invalid={errors.sinkId ? true : undefined} onInput={(e) => set({ sinkId: text(e) })} />
            <ErrorText error={errors.sinkId} />
          </label>
        )}
      </div>
      <label class="field">
        Table id
        <span class="hint">
          <code>in.c-&lt;bucket&gt;.&lt;table&gt;</code> (or <code>out.c-…</code>), e.g. <code>in.c-events.raw</code>
          {creating && <>; empty: <code>{defaultTableId(source.sourceId, draft)}</code></>}. A missing table is created with the columns below; an existing
          table gets those it lacks and keeps the others, but a column's type and the table's primary key cannot change.
        </span>
        <input name="tableId" value={draft.tableId} readOnly={readOnly} maxLength={256} autoComplete="off" spellcheck={false}
          placeholder={creating ? defaultTableId(source.sourceId, draft) : undefined}
          aria-invalid={errors.tableId ? true : undefined} onInput={(e) => set({ tableId: text(e) })} />
        <ErrorText error={errors.tableId} />
      </label>
      <label class="field">
        Description
        <textarea name="description" class="prose" value={draft.description} readOnly={readOnly} maxLength={4096} rows={2}
          onInput={(e) => set({ description: (e.target as HTMLTextAreaElement).value })} />
        <ErrorText error={errors.description} />
      </label>
      {source.type === 'otlp' && (
        <fieldset class="signals">
          <legend>Signals</legend>
          <p class="hint">The OTLP signals this sink takes; none checked = all of them.</p>
          {SIGNALS.map((s) => (
            <label class="check" key={s}>
              <input type="checkbox" name="allowedSignals" value={s} checked={draft.allowedSignals.includes(s)} disabled={readOnly}
                onChange={(e) => toggleSignal(s, (e.target as HTMLInputElement).checked)} />
              {s}
            </label>
          ))}
          <ErrorText error={errors.signals} />
        </fieldset>
      )}
      <h2 id="filter-heading">Filter</h2>
      <p class="hint">
        Optional: which records the sink writes. A record for which the expression is <code>false</code> is skipped (counted as
        filtered, not a failure); one for which it is <code>true</code> is written. Anything else, or an error, keeps the record as a
        mapping failure. Empty: every record is written.
      </p>
      <TemplateEditor id="sink-filter" label="Filter expression" name="filter" value={draft.filter} error={errors.filter} readOnly={readOnly}
        onInput={(filter) => set({ filter })}
        hint={<>Jsonnet that returns <code>true</code> or <code>false</code>, e.g. <code>Body("level") == "error"</code>, <code>Body("amount", 0) &gt; 100</code>.</>} />
      <h2 id="columns-heading">Columns</h2>
      <p class="hint">
        One row per record, the columns in this order (1 to 100). A column without a data type is a string column;
        a typed one (set through the API) keeps its type here.
      </p>
      {creating && !readOnly && (
        <ProposeMapping sourceId={source.sourceId} signals={draft.allowedSignals} onColumns={(columns) => set({ columns: columns.map(draftOf) })} />
      )}
      <ColumnsEditor columns={draft.columns} onChange={(columns) => set({ columns })} errors={errors.column} readOnly={readOnly} />
      <ErrorText error={errors.columns} />
      {!readOnly && (
        <div class="actions add-column">
          <label class="inline">
            Type of the new column
            <select value={newType} onChange={(e) => setNewType((e.target as HTMLSelectElement).value as ColumnType)}>
              {COLUMN_TYPES.map((t) => <option key={t.type} value={t.type}>{t.label}</option>)}
            </select>
          </label>
          <button type="button" onClick={addColumn} disabled={draft.columns.length >= 100}>Add column</button>
        </div>
      )}
      {!readOnly && !creating && (
        <label class="field">
          Change description
          <span class="hint">Optional: kept with the new version (default "Updated.").</span>
          <input name="changeDescription" value={draft.changeDescription} maxLength={4096} autoComplete="off" onInput={(e) => set({ changeDescription: text(e) })} />
        </label>
      )}
      {!readOnly && (
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>{creating ? 'Create sink' : 'Save mapping'}</button>
          {busy && <span class="muted" aria-live="polite">{creating ? 'Creating the sink…' : 'Saving…'}</span>}
          {saved && <span class="ok" role="status">{saved}</span>}
        </div>
      )}
      <ErrorText error={errors.form} />
      {!readOnly && hasErrors(errors) && !errors.form && <p class="error" role="status">Not saved: see the messages above.</p>}
    </form>
  );
}

