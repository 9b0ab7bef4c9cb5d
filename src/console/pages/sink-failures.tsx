/**
 * A sink's mapping failures (#/sources/<s>/sinks/<k>/failures), polled every 3 s: how many
 * records are failed now (`count`) and the most recent ones (GET .../failures?limit=N) with
 * their reason and raw record (body and headers behind details/summary). For the master token:
 * Reprocess (POST .../failures/reprocess, after fixing the mapping) and a replay from the event
 * log (sink-failures-replay.tsx).
 */
import './sink-statistics.css';
import { useState } from 'preact/hooks';
import { api, BRANCH } from '../api';
import { href } from '../router';
import { useLoad } from '../widgets/load';
import { ErrorText, Loading, Time, WriteOnly, formatBytes, formatCount } from '../widgets/common';
import { SinkReplay } from './sink-failures-replay';
import { Records } from './sink-statistics';
import type { MappingFailure, MappingFailuresAnswer } from '../../contract/failures';

const POLL_MS = 3000;
const LIMITS = [20, 100, 1000];
const enc = encodeURIComponent;

export function failuresPath(sourceId: string, sinkId: string): string {
  return `${BRANCH}/sources/${enc(sourceId)}/sinks/${enc(sinkId)}/failures`;
}

export function SinkFailures({ sourceId, sinkId }: { sourceId: string; sinkId: string }) {
  const [limit, setLimit] = useState(100);
  const base = failuresPath(sourceId, sinkId);
  const { data, error, reload } = useLoad(() => api<MappingFailuresAnswer>('GET', `${base}?limit=${limit}`), [sourceId, sinkId, limit], POLL_MS);

  return (
    <section class="sink-failures" aria-labelledby="sink-failures-title">
      <div class="sink-stats-head">
        <h2 id="sink-failures-title">Mapping failures</h2>
        <p class="muted">Live, every {POLL_MS / 1000} s</p>
      </div>
      <p class="hint">
        Records the sink's mapping could not turn into a row (a missing path, a template error). They are kept: fix the mapping, then
        reprocess them, or replay the sink's records from the event log.
      </p>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <div class="failures-top">
            <div class="card" role="group" aria-labelledby="failures-count-label">
              <div id="failures-count-label" class="card-label">Failed now</div>
              <div class={`value${data.count > 0 ? ' bad-value' : ''}`}>
                <Records n={data.count} />
              </div>
              <div class="muted">not written since; each record once</div>
            </div>
            <WriteOnly>
              <Reprocess path={`${base}/reprocess`} count={data.count} onDone={reload} />
            </WriteOnly>
          </div>
          <FailureList data={data} limit={limit} setLimit={setLimit} />
        </>
      )}
      <WriteOnly>
        <SinkReplay sourceId={sourceId} sinkId={sinkId} onFinished={reload} />
      </WriteOnly>
      <p class="hint">
        The rows written show in the <a href={href('sources', sourceId, 'sinks', sinkId, 'statistics')}>statistics</a>.
      </p>
    </section>
  );
}

function Reprocess({ path, count, onDone }: { path: string; count: number; onDone: () => Promise<void> }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [result, setResult] = useState<{ reprocessed: number; failed: number } | undefined>(undefined);
  const run = async () => {
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      setResult(await api<{ reprocessed: number; failed: number }>('POST', path));
      await onDone().catch(() => undefined);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="panel" aria-labelledby="reprocess-title">
      <h3 id="reprocess-title">Reprocess</h3>
      <p class="hint">Maps the kept failed records again with the sink's current mapping; those that map now are written to the table.</p>
      <div class="actions">
        <button type="button" class="primary" disabled={busy} onClick={run} aria-describedby="reprocess-result">
          {busy ? 'Reprocessing…' : 'Reprocess failed records'}
        </button>
        {count === 0 && !result && <span class="muted">Nothing is failed now.</span>}
      </div>
      <div id="reprocess-result" role="status" aria-live="polite">
        {result && (
          <p class={result.failed > 0 ? 'error' : 'ok'}>
            Reprocessed: {formatCount(result.reprocessed)} written, {formatCount(result.failed)} failed again.
          </p>
        )}
      </div>
      <ErrorText error={error} />
    </section>
  );
}

/** The body as text: UTF-8 as it is, base64 decoded when it is text. */
function bodyText(record: MappingFailure['record']): { text: string; note?: string } {
  if (record.bodyEncoding !== 'base64') return { text: record.body };
  try {
    const bytes = Uint8Array.from(atob(record.body), (c) => c.charCodeAt(0));
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), note: 'decoded from base64' };
  } catch {
    return { text: record.body, note: 'binary, shown as base64' };
  }
}

/** Pretty JSON when the body is JSON. */
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function FailureList({ data, limit, setLimit }: { data: MappingFailuresAnswer; limit: number; setLimit: (n: number) => void }) {
  return (
    <section aria-labelledby="failures-list-title">
      <div class="sink-stats-head">
        <h3 id="failures-list-title">Most recent</h3>
        <p class="muted">
          {data.failures.length === data.count ? `${formatCount(data.count)} listed` : `${formatCount(data.failures.length)} listed of ${formatCount(data.count)}`}
        </p>
        <label class="inline-field">
          Show
          <select value={String(limit)} onChange={(e) => setLimit(Number((e.target as HTMLSelectElement).value))}>
            {LIMITS.map((n) => <option key={n} value={String(n)}>{n}</option>)}
          </select>
        </label>
      </div>
      <div class="scroll">
        <table class="list failures" aria-label="Mapping failures">
          <thead>
            <tr>
              <th scope="col" class="num">Offset</th><th scope="col">Failed</th><th scope="col">Reason</th><th scope="col">Record</th>
            </tr>
          </thead>
          <tbody>
            {data.failures.length === 0 && <tr><td colSpan={4} class="muted">No failed records.</td></tr>}
            {data.failures.map((f) => {
              const body = bodyText(f.record);
              const headers = Object.entries(f.record.headers ?? {});
              return (
                <tr key={f.offset}>
                  <td class="num">{f.offset}</td>
                  <td><Time iso={f.failedAt} /></td>
                  <td class="failure-reason">{f.reason}</td>
                  <td class="failure-record">
                    <div class="muted">
                      received <Time iso={f.record.receivedAt} /> from <code>{f.record.ip}</code>
                      {f.record.signal && <> · {f.record.signal}</>}
                    </div>
                    <details>
                      <summary>
                        Body <span class="muted">({formatBytes(new TextEncoder().encode(body.text).length)}{body.note ? `, ${body.note}` : ''})</span>
                        <code class="body-preview">{body.text.slice(0, 60)}{body.text.length > 60 ? '…' : ''}</code>
                      </summary>
                      <pre aria-label={`Body of the record at offset ${f.offset}`}>{pretty(body.text)}</pre>
                    </details>
                    {headers.length > 0 && (
                      <details>
                        <summary>Headers <span class="muted">({headers.length})</span></summary>
                        <table class="list headers">
                          <tbody>
                            {headers.map(([k, v]) => (
                              <tr key={k}><th scope="row"><code>{k}</code></th><td><code>{v}</code></td></tr>
                            ))}
                          </tbody>
                        </table>
                      </details>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
