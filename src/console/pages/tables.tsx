/**
 * Tables: the buckets with their tables here; one table (schema, preview, export, SQL) in
 * table-detail.tsx. Routes: #/tables, #/tables/<tableId>.
 */
import './table-pages.css';
import { useState } from 'preact/hooks';
import type { Route } from '../router';
import { href } from '../router';
import { api } from '../api';
import { useLoad } from '../widgets/load';
import { ErrorText, Loading, Time, formatCount } from '../widgets/common';
import { TablePage } from './table-detail';
import type { BucketJson as Bucket, TableJson as Table } from '../../contract/storage-tables';

export function TablesPage({ route }: { route: Route }) {
  const [, tableId] = route.parts;
  if (tableId !== undefined) return <TablePage tableId={tableId} />;
  return <TableList />;
}

function TableList() {
  const { data, error } = useLoad(
    async () => {
      const [buckets, tables] = await Promise.all([
        api<Bucket[]>('GET', '/v2/storage/buckets'),
        api<Table[]>('GET', '/v2/storage/tables?include=columns'),
      ]);
      return { buckets, tables };
    },
    [],
    10_000,
  );
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  const groups = (data?.buckets ?? [])
    .slice()
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((bucket) => ({
      bucket,
      tables: (data?.tables ?? [])
        .filter((t) => t.bucket.id === bucket.id && (needle === '' || t.id.toLowerCase().includes(needle)))
        .sort((a, b) => a.name.localeCompare(b.name)),
    }))
    .filter((g) => needle === '' || g.tables.length > 0 || g.bucket.id.toLowerCase().includes(needle));
  return (
    <>
      <h1>Tables</h1>
      <p class="muted">The buckets this token can read, with their tables. Sinks create them; open a table for its schema, rows, export and SQL.</p>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <div class="filters">
            <label class="field">
              Filter tables
              <input type="search" value={filter} placeholder="in.c-events" onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
            </label>
          </div>
          {data.buckets.length === 0 && <p class="muted">No buckets yet: a sink creates its table (and bucket) when it is created.</p>}
          {groups.map(({ bucket, tables }) => (
            <section key={bucket.id} class="panel" aria-labelledby={`bucket-${bucket.id}`}>
              <h2 id={`bucket-${bucket.id}`}>
                <code>{bucket.id}</code> <span class="badge">{bucket.stage}</span>
              </h2>
              <p class="muted">Bucket created <Time iso={bucket.created} />, {tables.length} table{tables.length === 1 ? '' : 's'}.</p>
              {tables.length > 0 && (
                <div class="scroll">
                  <table class="list">
                    <thead>
                      <tr><th scope="col">Table</th><th scope="col">Columns</th><th scope="col">Rows</th><th scope="col">Last import</th><th scope="col">Created</th></tr>
                    </thead>
                    <tbody>
                      {tables.map((t) => (
                        <tr key={t.id}>
                          <td><a href={href('tables', t.id)}>{t.name}</a></td>
                          <td>{t.columns ? t.columns.length : '—'}</td>
                          <td>{formatCount(t.rowsCount)}</td>
                          <td><Time iso={t.lastImportDate} /></td>
                          <td><Time iso={t.created} /></td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
          ))}
        </>
      )}
    </>
  );
}
