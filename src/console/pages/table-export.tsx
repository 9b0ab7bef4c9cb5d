/**
 * A table's export into a file: POST .../export-async answers a Storage job, followed at
 * GET /v2/storage/jobs/<id> (its `progress` shown live); on success its file
 * (GET /v2/storage/files/<id>) gives a signed download URL, which holds no token.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorText, formatBytes, countOf, formatCount } from '../widgets/common';
import type { TableJson as Table } from '../../contract/storage-tables';
import type { StorageFileJson, StorageJobJson } from '../../contract/storage-jobs';

export function TableExport({ table }: { table: Table }) {
  const columns = table.columns ?? [];
  const [format, setFormat] = useState<'rfc' | 'parquet'>('rfc');
  const [gzip, setGzip] = useState(true);
  const [chosen, setChosen] = useState<string[]>([]);
  const [limit, setLimit] = useState('');
  const [job, setJob] = useState<StorageJobJson | undefined>(undefined);
  const [file, setFile] = useState<StorageFileJson | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const alive = useRef(true);
  useEffect(() => () => { alive.current = false; }, []);

  const start = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setJob(undefined);
    setFile(undefined);
    try {
      const body: Record<string, unknown> = { format };
      if (format === 'rfc') body.gzip = gzip;
      // In the table's order, whatever order they were ticked in.
      if (chosen.length > 0) body.columns = columns.filter((c) => chosen.includes(c));
      if (limit.trim() !== '') body.limit = Number(limit);
      let current = await api<StorageJobJson>('POST', `/v2/storage/tables/${encodeURIComponent(table.id)}/export-async`, { json: body });
      setJob(current);
      for (let delay = 200; current.status === 'waiting' || current.status === 'processing'; delay = Math.min(delay * 1.5, 1000)) {
        await new Promise((r) => setTimeout(r, delay));
        if (!alive.current) return;
        current = await api<StorageJobJson>('GET', `/v2/storage/jobs/${current.id}`);
        setJob(current);
      }
      if (current.status === 'success' && current.results?.file) {
        setFile(await api<StorageFileJson>('GET', `/v2/storage/files/${current.results.file.id}`));
      }
    } catch (err) {
      if (alive.current) setError(err);
    } finally {
      if (alive.current) setBusy(false);
    }
  };

  const toggle = (column: string, on: boolean) => setChosen((list) => (on ? [...list, column] : list.filter((c) => c !== column)));
  const progress = job?.progress;
  return (
    <section aria-labelledby="export">
      <h2 id="export">Export</h2>
      <form class="stack" onSubmit={start}>
        <div class="filters">
          <label class="field">
            Format
            <select value={format} onChange={(e) => setFormat((e.target as HTMLSelectElement).value as 'rfc' | 'parquet')}>
              <option value="rfc">CSV</option>
              <option value="parquet">Parquet</option>
            </select>
          </label>
          <label class="field">
            Limit
            <input type="number" min="1" inputMode="numeric" value={limit} placeholder="all rows" onInput={(e) => setLimit((e.target as HTMLInputElement).value)} />
          </label>
          {format === 'rfc' && (
            <div class="checks">
              <label><input type="checkbox" checked={gzip} onChange={(e) => setGzip((e.target as HTMLInputElement).checked)} /> Gzip the CSV</label>
            </div>
          )}
        </div>
        {columns.length > 0 && (
          <fieldset class="plain">
            <legend>Columns <span class="hint">(none ticked: all)</span></legend>
            <div class="checks">
              {columns.map((c) => (
                <label key={c}>
                  <input type="checkbox" checked={chosen.includes(c)} onChange={(e) => toggle(c, (e.target as HTMLInputElement).checked)} /> {c}
                </label>
              ))}
            </div>
          </fieldset>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>Export</button>
        </div>
        <ErrorText error={error} />
      </form>
      {job && (
        <div class="export-progress" role="status" aria-live="polite">
          <span>Export job {job.id}: <span class={`badge ${job.status === 'success' ? 'on' : job.status === 'error' ? 'bad' : 'run'}`}>{job.status}</span></span>
          {(job.status === 'waiting' || job.status === 'processing') && (
            <>
              <progress
                aria-label="Rows exported"
                max={progress?.totalRows ?? undefined}
                value={progress?.totalRows ? progress.rows : undefined}
              />
              <span>
                {formatCount(progress?.rows ?? 0)} {progress?.totalRows !== null && progress?.totalRows !== undefined ? `of ${formatCount(progress.totalRows)} ` : ''}rows
              </span>
            </>
          )}
          {job.status === 'success' && progress && <span>{countOf(progress.rows, 'row')} exported.</span>}
          {job.status === 'error' && <p class="error" role="alert">{job.error?.message ?? 'The export failed.'}</p>}
        </div>
      )}
      {file && (
        <p>
          <a href={file.url} target="_blank" rel="noopener noreferrer" download={file.name}>Download {file.name}</a>{' '}
          <span class="muted">({formatBytes(file.sizeBytes)}; the link works for an hour, export again for a new one)</span>
        </p>
      )}
    </section>
  );
}
