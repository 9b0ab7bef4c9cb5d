/**
 * One table (#/tables/<tableId>): rows and times, schema, metadata, a data preview (the CSV of
 * GET .../data-preview), an export into a file, and a read-only SQL box.
 */
import { useState } from 'preact/hooks';
import { api, apiText } from '../api';
import { href } from '../router';
import { useLoad } from '../widgets/load';
import { CopyButton, ErrorText, Loading, Time, countOf, formatCount } from '../widgets/common';
import type { TableJson as Table } from '../../contract/storage-tables';
import { parseCsv, quoteIdent } from './table-csv';
import { DataTable } from './table-data';
import { TableExport } from './table-export';
import { SqlBox } from './table-sql';

const PREVIEW_LIMITS = [10, 100, 1000];

export function TablePage({ tableId }: { tableId: string }) {
  const { data: table, error } = useLoad(() => api<Table>('GET', `/v2/storage/tables/${encodeURIComponent(tableId)}`), [tableId], 10_000);
  return (
    <>
      <p><a href={href('tables')}>← Tables</a></p>
      <h1 class="title-id">
        <code>{tableId}</code> <CopyButton text={tableId} label="table id" />
      </h1>
      <ErrorText error={error} />
      {!table && !error && <Loading />}
      {table && <TableBody table={table} />}
    </>
  );
}

function TableBody({ table }: { table: Table }) {
  const columns = table.columns ?? [];
  const meta = Object.fromEntries(table.metadata.map((m) => [m.key, m.value]));
  const sourceId = meta['KBC.stream.source.id'];
  const sinkId = meta['KBC.stream.sink.id'];
  return (
    <>
      <div class="cards">
        <div class="card"><div class="muted">Rows</div><div class="value">{formatCount(table.rowsCount)}</div></div>
        <div class="card"><div class="muted">Columns</div><div class="value">{columns.length}</div></div>
        <div class="card"><div class="muted">Last import</div><div><Time iso={table.lastImportDate} /></div></div>
        <div class="card"><div class="muted">Created</div><div><Time iso={table.created} /></div></div>
      </div>
      {sourceId && sinkId && (
        <p>Written by the sink <a href={href('sources', sourceId, 'sinks', sinkId)}>{sourceId}/{sinkId}</a>.</p>
      )}
      <JumpTo sections={[['preview', 'Go to the data preview'], ['export', 'Go to the export'], ['sql', 'Go to SQL']]} />
      <div class="grid2">
        <section aria-labelledby="schema">
          <h2 id="schema">Schema</h2>
          <div class="scroll">
            <table class="list">
              <thead><tr><th scope="col">#</th><th scope="col">Column</th><th scope="col">Type</th><th scope="col">Key</th></tr></thead>
              <tbody>
                {columns.map((c, i) => (
                  <tr key={c}>
                    <td class="muted">{i + 1}</td>
                    <td><code>{c}</code></td>
                    <td>{columnType(table, c)}</td>
                    <td>{table.primaryKey.includes(c) ? <span class="badge" title="part of the primary key: imports upsert by it">key</span> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        <section aria-labelledby="metadata">
          <h2 id="metadata">Metadata</h2>
          {table.metadata.length === 0 ? (
            <p class="muted">No metadata.</p>
          ) : (
            <dl class="props">
              {table.metadata.map((m) => [<dt key={`k${m.key}`}>{m.key}</dt>, <dd key={`v${m.key}`}><code>{m.value}</code></dd>])}
            </dl>
          )}
          <dl class="props">
            <dt>Bucket</dt><dd><code>{table.bucket.id}</code> ({table.bucket.stage})</dd>
            <dt>Last change</dt><dd><Time iso={table.lastChangeDate} /></dd>
          </dl>
        </section>
      </div>
      <Preview tableId={table.id} rowsCount={table.rowsCount} />
      <TableExport table={table} />
      <SqlBox initial={`SELECT * FROM ${quoteIdent(table.bucket.id)}.${quoteIdent(table.name)} LIMIT 100`} />
    </>
  );
}

/**
 * Buttons to the page's sections below the schema (export and SQL sit under a preview of up to
 * 1000 rows). Buttons, not `#id` links: the console's routes live in the URL's fragment.
 */
function JumpTo({ sections }: { sections: [id: string, label: string][] }) {
  return (
    <nav class="actions" aria-label="On this page">
      {sections.map(([id, label]) => (
        <button key={id} type="button" class="small" onClick={() => document.getElementById(id)?.scrollIntoView({ block: 'start' })}>{label}</button>
      ))}
    </nav>
  );
}

function Preview({ tableId, rowsCount }: { tableId: string; rowsCount: number }) {
  const [limit, setLimit] = useState(100);
  // Loaded again when the table gets rows (its row count changes).
  const { data, error, reload } = useLoad(
    async () => parseCsv(await apiText('GET', `/v2/storage/tables/${encodeURIComponent(tableId)}/data-preview?limit=${limit}`)),
    [tableId, limit, rowsCount],
  );
  const [header = [], ...rows] = data ?? [];
  return (
    <section aria-labelledby="preview">
      <h2 id="preview">Data preview</h2>
      <div class="inline">
        <label for="preview-limit">Rows</label>
        <select id="preview-limit" value={String(limit)} onChange={(e) => setLimit(Number((e.target as HTMLSelectElement).value))}>
          {PREVIEW_LIMITS.map((n) => <option key={n} value={String(n)}>{n}</option>)}
        </select>
        <button type="button" class="small" onClick={() => void reload().catch(() => undefined)}>Refresh</button>
        {data && <span class="muted">{formatCount(rows.length)} of {countOf(rowsCount, 'row')}</span>}
      </div>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && <DataTable columns={header.map((name) => ({ name }))} rows={rows} caption="Data preview" />}
    </section>
  );
}

/**
 * A column's type as the table detail gives it: the base type and the target's own type of a
 * typed table (`definition`), or "string" for the untyped columns of a table without one.
 */
function columnType(table: Table, column: string) {
  const def = table.definition?.columns.find((d) => d.name === column);
  if (!def) return <span class="muted">string</span>;
  const native = `${def.definition.type}${def.definition.length ? `(${def.definition.length})` : ''}${def.definition.nullable ? '' : ' NOT NULL'}`;
  return <span title={native}>{def.basetype ?? native}</span>;
}
