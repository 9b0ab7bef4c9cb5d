/**
 * The read-only SQL box: POST /v2/storage/sql {query, limit} and its answer as a table. The
 * API refuses anything that writes (400) or reads a bucket the token cannot read (403); its
 * message is shown under the box.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorText, countOf } from '../widgets/common';
import { DataTable } from './table-data';
import type { SqlAnswer, SqlBody } from '../../contract/storage-tables';


export function SqlBox({ initial }: { initial: string }) {
  const [query, setQuery] = useState(initial);
  const [limit, setLimit] = useState('100');
  const [answer, setAnswer] = useState<SqlAnswer | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (event?: Event) => {
    event?.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: SqlBody = { query };
      if (limit.trim() !== '') body.limit = Number(limit);
      setAnswer(await api<SqlAnswer>('POST', '/v2/storage/sql', { json: body }));
    } catch (err) {
      setAnswer(undefined);
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void run(e);
  };
  return (
    <section aria-labelledby="sql" class="sql">
      <h2 id="sql">SQL</h2>
      <form class="stack" onSubmit={run}>
        <label class="field">
          SQL query
          <span class="hint" id="sql-hint">One statement that reads (SELECT, WITH, VALUES), in the target's SQL (DuckDB or PostgreSQL: the answer names it). Tables are "bucket id"."table", each part in double quotes. Ctrl+Enter runs it.</span>
          <textarea
            aria-describedby="sql-hint"
            spellcheck={false}
            value={query}
            onInput={(e) => setQuery((e.target as HTMLTextAreaElement).value)}
            onKeyDown={onKey}
          />
        </label>
        <div class="actions">
          <label class="inline">
            Row limit
            <input type="number" min="1" inputMode="numeric" value={limit} style={{ width: '7rem' }} onInput={(e) => setLimit((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary" disabled={busy || query.trim() === ''}>Run query</button>
        </div>
        <ErrorText error={error} id="sql-error" />
      </form>
      {answer && (
        <>
          <p class="muted" role="status">
            {countOf(answer.rowsCount, 'row')} ({answer.durationMs} ms{answer.dialect ? `, ${answer.dialect} SQL` : ''})
            {answer.truncated && ' — more rows matched than the limit; raise it or narrow the query.'}
          </p>
          <DataTable columns={answer.columns} rows={answer.rows} caption="Query result" />
        </>
      )}
    </section>
  );
}
