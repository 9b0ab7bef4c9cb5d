/**
 * Sources: the list and a new source here; one source's pages in source.tsx; a sink's pages in
 * sink.tsx (mapping editor, live preview, settings) and sink-statistics.tsx / sink-failures.tsx.
 *
 * Routes: #/sources, #/sources/<sourceId>[/<tab>], #/sources/<sourceId>/sinks/new,
 * #/sources/<sourceId>/sinks/<sinkId>[/<tab>].
 */
import './source.css';
import { useState } from 'preact/hooks';
import type { Route } from '../router';
import { href, go } from '../router';
import { api, runTask, BRANCH } from '../api';
import { useLoad } from '../widgets/load';
import { ActionButton, ErrorText, Field, Loading, Time, WriteOnly, formatCount } from '../widgets/common';
import { SOURCE_LAST_HOUR_HINT, recordsInLastHour, seg } from './source-model';
import type { AggregatedSourcesAnswer } from '../../contract/statistics';
import type { SourcesAnswer } from '../../contract/stream-sources';
import { QuotaBadges, SourcePage } from './source';
import { SinkPage } from './sink';

export function SourcesPage({ route }: { route: Route }) {
  const [, sourceId, part, sinkId, tab] = route.parts;
  if (sourceId === undefined) return <SourceList />;
  if (part === 'sinks' && sinkId !== undefined) return <SinkPage sourceId={sourceId} sinkId={sinkId} tab={tab} route={route} />;
  return <SourcePage sourceId={sourceId} tab={part} route={route} />;
}

/**
 * The list from the aggregation endpoint (sources with their sinks and the sinks' statistics,
 * files included), polled every 5 s. "Last hour" is computed from those files: see
 * recordsInLastHour in source-model.ts.
 */
function SourceList() {
  const { data, error, reload } = useLoad(() => api<AggregatedSourcesAnswer>('GET', `${BRANCH}/aggregation/sources`), [], 5000);
  const now = Date.now();
  return (
    <>
      <h1>Sources</h1>
      <WriteOnly>
        <NewSource onCreated={reload} />
      </WriteOnly>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <div class="scroll">
            <table class="list" aria-label="Sources">
              <thead>
                <tr>
                  <th scope="col">Name</th><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Sinks</th>
                  <th scope="col">Records</th><th scope="col">Last hour</th><th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {data.sources.length === 0 && <tr><td colSpan={7} class="muted">No sources yet.</td></tr>}
                {data.sources.map((s) => (
                  <tr key={s.sourceId}>
                    <td><a href={href('sources', s.sourceId)}>{s.name}</a></td>
                    <td><code>{s.sourceId}</code></td>
                    <td>{s.type.toUpperCase()}</td>
                    <td>{s.sinks?.length ?? 0}</td>
                    <td>{formatCount((s.sinks ?? []).reduce((n, k) => n + (k.statistics?.total?.recordsCount ?? 0), 0))}</td>
                    <td>{formatCount((s.sinks ?? []).reduce((n, k) => n + recordsInLastHour(k.statistics?.files, now), 0))}</td>
                    <td>
                      {s.disabled ? <span class="badge off">disabled</span> : <span class="badge on">enabled</span>}
                      <QuotaBadges quota={s.quota} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="hint">Records: what the source's sinks have taken in all (their statistics, summed). {SOURCE_LAST_HOUR_HINT}</p>
        </>
      )}
      <DeletedSources onRestored={reload} />
    </>
  );
}

/** Soft-deleted sources (GET .../sources/deleted), shown on demand; Undelete for a token that may write. */
function DeletedSources({ onRestored }: { onRestored: () => Promise<void> }) {
  const [open, setOpen] = useState(false);
  return (
    <section aria-labelledby="deleted-sources">
      <h2 id="deleted-sources">Deleted sources</h2>
      <label class="src-check">
        <input type="checkbox" checked={open} aria-controls="deleted-sources-list" onChange={(e) => setOpen((e.target as HTMLInputElement).checked)} />
        Show deleted sources
      </label>
      <div id="deleted-sources-list">{open && <DeletedList onRestored={onRestored} />}</div>
    </section>
  );
}

function DeletedList({ onRestored }: { onRestored: () => Promise<void> }) {
  const { data, error, reload } = useLoad(() => api<SourcesAnswer>('GET', `${BRANCH}/sources/deleted`), [], 5000);
  const undelete = async (id: string) => {
    await runTask('PUT', `${BRANCH}/sources/${seg(id)}/undelete`);
    await Promise.all([reload(), onRestored()]);
  };
  return (
    <>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <div class="scroll">
          <table class="list" aria-label="Deleted sources">
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Deleted</th><th scope="col">By</th><th scope="col"><span class="muted">Actions</span></th></tr>
            </thead>
            <tbody>
              {data.sources.length === 0 && <tr><td colSpan={6} class="muted">No deleted sources. (A source deleted with its tables is gone for good.)</td></tr>}
              {data.sources.map((s) => (
                <tr key={s.sourceId}>
                  <td>{s.name}</td>
                  <td><code>{s.sourceId}</code></td>
                  <td>{s.type.toUpperCase()}</td>
                  <td><Time iso={s.deleted?.at} /></td>
                  <td>{s.deleted?.by?.tokenDesc ?? s.deleted?.by?.userName ?? '—'}</td>
                  <td>
                    <WriteOnly>
                      <ActionButton class="small" label={`Undelete ${s.name}`} onAction={() => undelete(s.sourceId)}>Undelete</ActionButton>
                    </WriteOnly>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function NewSource({ onCreated }: { onCreated: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [type, setType] = useState('http');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const task = await runTask<{ outputs?: { sourceId?: string } }>('POST', `${BRANCH}/sources`, { json: { name, type } });
      setName('');
      await onCreated();
      if (task.outputs?.sourceId) go('sources', task.outputs.sourceId);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <details class="panel">
      <summary>New source</summary>
      <form class="stack" onSubmit={submit}>
        <Field label="Name" error={error}>
          <input name="name" required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </Field>
        <Field label="Type" hint="HTTP takes any request body; OTLP takes OpenTelemetry logs, metrics and traces.">
          <select name="type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
            <option value="http">HTTP</option>
            <option value="otlp">OTLP</option>
          </select>
        </Field>
        <div class="actions"><button type="submit" class="primary" disabled={busy}>Create source</button></div>
      </form>
    </details>
  );
}
