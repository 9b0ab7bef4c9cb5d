/**
 * Live preview of a sink: a sample event (typed, pasted, or one of the source's recent records)
 * rendered through the sink's saved mapping by the test endpoint
 * (POST .../sources/<id>/test: every sink of the source, nothing stored), again ~300 ms after
 * each change. This sink's row is shown as column -> value; a record the mapping cannot take
 * answers 422 with the failing column, which is marked in the table. A sink with a filter shows
 * a sample the filter skips as filtered out (no row), one it cannot decide as its failure, and
 * can check the source's recent records against the filter (each through the test endpoint).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, BRANCH } from '../api';
import { useLoad } from '../widgets/load';
import { ErrorText, Loading, Time } from '../widgets/common';
import { SIGNALS, type Signal } from './sink-editor';
import type { SinkView, SourceView } from '../../contract/stream-sources';
import type { RecentRecord, RecentRecordsAnswer, TestAnswer } from '../../contract/failures';

type Result =
  | { state: 'idle' }
  | { state: 'running' }
  | { state: 'done'; columns?: { name: string; value: string | null }[]; filtered: boolean; others: TestAnswer['tables'] }
  | { state: 'failed'; message: string; column?: string; request?: boolean };

/** What the sink does with a recent record, as the test endpoint answers for it. */
type Verdict = { state: 'kept' } | { state: 'filtered' } | { state: 'failed'; message: string };

/** A filter's failure (`Filter failed: ...`, `Filter returned ...`): the record would be kept as a mapping failure. */
const isFilterFailure = (message: string) => /^Filter (failed|returned)\b/.test(message);

/** Headers a page cannot set (the browser's own), left out of a picked record's headers. */
const SKIPPED_HEADERS = new Set([
  'accept-charset', 'accept-encoding', 'access-control-request-headers', 'access-control-request-method', 'connection',
  'content-length', 'content-type', 'cookie', 'date', 'dnt', 'expect', 'host', 'keep-alive', 'origin', 'referer',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'via', 'user-agent', 'x-storageapi-token',
]);

const DEBOUNCE_MS = 300;

const SAMPLE = '{\n  "user": {"id": 42, "name": "Ann"},\n  "action": "login"\n}';

function skipped(name: string): boolean {
  const n = name.toLowerCase();
  return SKIPPED_HEADERS.has(n) || n.startsWith('sec-') || n.startsWith('proxy-');
}

/** `Name: value` lines -> a header map; throws on a line without a colon. */
export function parseHeaderLines(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`Line ${i + 1} of the headers is not "Name: value".`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  });
  return headers;
}

function decodeBase64(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * The test endpoint with the sample's own headers (those a page may set): the api client adds
 * the session's token (the endpoint leaves it out of the record) and reads errors in the
 * Stream envelope's words.
 */
function renderSample(sourceId: string, sample: Sample, signal: Signal | undefined, abort: AbortSignal): Promise<TestAnswer> {
  const headers = Object.fromEntries(Object.entries(sample.headers).filter(([name]) => !skipped(name)));
  const query = signal ? `?signal=${signal}` : '';
  const body = sample.bytes ? new Blob([new Uint8Array(sample.bytes)]) : sample.text;
  return api<TestAnswer>('POST', `${BRANCH}/sources/${encodeURIComponent(sourceId)}/test${query}`, { headers, body, contentType: sample.contentType, signal: abort });
}

interface Sample {
  text: string;
  /** A picked record whose body is not UTF-8: sent as these bytes until the text is edited. */
  bytes?: Uint8Array;
  contentType: string;
  headers: Record<string, string>;
}

export function SinkPreview({ source, sink }: { source: SourceView; sink: SinkView }) {
  const [body, setBody] = useState(SAMPLE);
  const [bytes, setBytes] = useState<Uint8Array | undefined>(undefined);
  const [contentType, setContentType] = useState('application/json');
  const [headerText, setHeaderText] = useState('');
  const [signal, setSignal] = useState<Signal>(sink.allowedSignals?.[0] ?? 'logs');
  const [picked, setPicked] = useState<number | undefined>(undefined);
  const [result, setResult] = useState<Result>({ state: 'idle' });
  const [headerError, setHeaderError] = useState<string | undefined>(undefined);
  const run = useRef(0);
  const otlp = source.type === 'otlp';

  // Rendered again ~300 ms after the last change; an older answer never replaces a newer one.
  useEffect(() => {
    let headers: Record<string, string>;
    try {
      headers = parseHeaderLines(headerText);
      setHeaderError(undefined);
    } catch (err) {
      setHeaderError((err as Error).message);
      return;
    }
    const id = ++run.current;
    const abort = new AbortController();
    const timer = setTimeout(async () => {
      setResult({ state: 'running' });
      try {
        const answer = await renderSample(source.sourceId, { text: body, bytes, contentType, headers }, otlp ? signal : undefined, abort.signal);
        if (id !== run.current) return;
        const mine = answer.tables.find((t) => t.sinkId === sink.sinkId);
        setResult({ state: 'done', columns: mine?.rows[0]?.columns, filtered: mine?.filtered === true, others: answer.tables.filter((t) => t.sinkId !== sink.sinkId) });
      } catch (err) {
        if (id !== run.current || abort.signal.aborted) return;
        const message = err instanceof Error ? err.message : String(err);
        const column = /column "([^"]+)"/.exec(message)?.[1];
        // A header the browser refuses (TypeError) is the sample's fault, not the mapping's.
        setResult({ state: 'failed', message, column, request: err instanceof TypeError });
      }
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [body, bytes, contentType, headerText, signal, source.sourceId, sink.sinkId, sink.version.number]);

  const pick = (r: RecentRecord) => {
    setPicked(r.offset);
    const entries = Object.entries(r.headers);
    setContentType(entries.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? '');
    setHeaderText(entries.filter(([n]) => !skipped(n)).map(([n, v]) => `${n}: ${v}`).join('\n'));
    if (r.bodyEncoding === 'base64') {
      const raw = decodeBase64(r.body);
      setBytes(raw);
      setBody(new TextDecoder().decode(raw));
    } else {
      setBytes(undefined);
      setBody(r.body);
    }
    if (otlp && r.signal) setSignal(r.signal);
  };

  const columnNames = sink.table.mapping.columns.map((c) => c.name);
  const failedHere = result.state === 'failed' && result.column !== undefined && columnNames.includes(result.column);
  const filterFailed = result.state === 'failed' && !result.request && isFilterFailure(result.message);
  const hasFilter = sink.table.mapping.filter !== undefined;
  const filtered = result.state === 'done' && result.filtered;

  return (
    <div class="preview">
      <p class="hint">
        The sample is rendered through the sink's <strong>saved</strong> mapping (version {sink.version.number}) by the
        source's test endpoint, as ingestion would; nothing is stored. Save the mapping first to preview a change.
        {hasFilter && <> The sink's filter decides first: a sample it skips is shown as filtered out.</>}
      </p>
      <div class="grid2">
        <section aria-labelledby="sample-heading">
          <h2 id="sample-heading">Sample event</h2>
          <div class="stack">
            <label class="field">
              Event body
              <span class="hint">Paste or type a request body, or use a recent record; the row follows as you type.</span>
              <textarea name="body" value={body} rows={7} spellcheck={false}
                onInput={(e) => {
                  setBody((e.target as HTMLTextAreaElement).value);
                  setBytes(undefined);
                  setPicked(undefined);
                }} />
              {bytes && <span class="hint">Binary body of the picked record ({bytes.length} bytes), sent as it is until you edit it.</span>}
            </label>
            <div class="grid2 tight">
              <label class="field">
                Content type
                <input name="contentType" value={contentType} autoComplete="off" spellcheck={false} onInput={(e) => setContentType((e.target as HTMLInputElement).value)} />
              </label>
              {otlp && (
                <label class="field">
                  Signal
                  <select value={signal} onChange={(e) => setSignal((e.target as HTMLSelectElement).value as Signal)}>
                    {SIGNALS.map((s) => <option key={s} value={s}>{s}</option>)}
                  </select>
                </label>
              )}
            </div>
            <label class="field">
              Headers
              <span class="hint">Optional, one <code>Name: value</code> a line. The browser adds its own (User-Agent, Accept, …).</span>
              <textarea name="headers" value={headerText} rows={3} spellcheck={false} aria-invalid={headerError ? true : undefined}
                onInput={(e) => setHeaderText((e.target as HTMLTextAreaElement).value)} />
              <ErrorText error={headerError} />
              {result.state === 'failed' && result.request && <ErrorText error={result.message} />}
            </label>
          </div>
        </section>
        <section aria-labelledby="row-heading">
          <h2 id="row-heading">Row of {sink.name}</h2>
          <p class="muted" aria-live="polite">{result.state === 'running' ? 'Rendering…' : filtered ? 'Filtered out.' : result.state === 'done' ? 'Rendered.' : ''}</p>
          {filtered && (
            <p class="preview-filtered" role="status">
              Filtered out: the sink's filter returns <code>false</code> for this sample. The record would not be written; it would be counted as filtered.
            </p>
          )}
          {result.state === 'failed' && !result.request && (
            <div class="preview-error">
              <ErrorText error={result.message} />
              {filterFailed && hasFilter && (
                <p class="hint">The filter could not decide for this sample (it must return true or false): the record would be kept as a mapping failure. If another sink of the source has a filter too, the message may be its.</p>
              )}
              {filterFailed && !hasFilter && <p class="hint">Another sink of the source has a filter that could not decide for the sample: the test endpoint answers for all of them at once.</p>}
              {!filterFailed && !failedHere && result.column === undefined && <p class="hint">The test endpoint answered with this message for the sample.</p>}
              {!failedHere && result.column !== undefined && (
                <p class="hint">Column "{result.column}" is not a column of this sink: another sink of the source could not map the sample, and the test endpoint answers for all of them at once.</p>
              )}
            </div>
          )}
          {result.state === 'done' && !result.columns && !filtered && <p class="muted">The test endpoint rendered no row for this sink (its signals do not take the sample).</p>}
          <div class="scroll">
            <table class={`list preview-row${filtered ? ' filtered' : ''}`} aria-labelledby="row-heading">
              <thead>
                <tr><th scope="col">Column</th><th scope="col">Value</th></tr>
              </thead>
              <tbody>
                {columnNames.map((name, i) => {
                  const failed = failedHere && result.state === 'failed' && result.column === name;
                  // null: NULL in a typed column.
                  const value = result.state === 'done' ? (result.columns?.find((c) => c.name === name) ?? result.columns?.[i])?.value : undefined;
                  return (
                    <tr key={name} class={failed ? 'failed' : undefined}>
                      <th scope="row"><code>{name}</code></th>
                      <td>
                        {failed && result.state === 'failed' ? <span class="error">{result.message}</span>
                          : value === null ? <span class="muted">NULL</span>
                          : value !== undefined ? <code class="value">{value}</code>
                          : <span class="muted">—</span>}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {result.state === 'done' && result.others.length > 0 && <OtherSinks tables={result.others} />}
          <RecentRecords sourceId={source.sourceId} sinkId={hasFilter ? sink.sinkId : undefined} version={sink.version.number} otlp={otlp} picked={picked} onPick={pick} />
        </section>
      </div>
    </div>
  );
}

/** The same sample's row in the source's other sinks (the test endpoint renders all of them at once). */
function OtherSinks({ tables }: { tables: TestAnswer['tables'] }) {
  return (
    <section aria-labelledby="others-heading" class="recent">
      <h3 id="others-heading">The other sinks of the source</h3>
      {tables.map((t) => (
        <details key={t.sinkId}>
          <summary>Sink <code>{t.sinkId}</code> → <code>{t.tableId}</code></summary>
          <div class="scroll">
            <table class="list" aria-label={`Sink ${t.sinkId}: its row`}>
              <tbody>
                {(t.rows[0]?.columns ?? []).map((c) => (
                  <tr key={c.name}><th scope="row"><code>{c.name}</code></th><td><code class="value">{c.value}</code></td></tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ))}
    </section>
  );
}

/** A recent record as a sample of the test endpoint: its body (bytes when it is not UTF-8), content type and headers. */
function sampleOf(r: RecentRecord): Sample {
  const entries = Object.entries(r.headers);
  const contentType = entries.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? '';
  return r.bodyEncoding === 'base64'
    ? { text: '', bytes: decodeBase64(r.body), contentType, headers: r.headers }
    : { text: r.body, contentType, headers: r.headers };
}

/** Each record through the test endpoint, one after the other: what the sink's filter does with it. */
async function checkRecords(sourceId: string, sinkId: string, records: readonly RecentRecord[], otlp: boolean, abort: AbortSignal): Promise<Map<number, Verdict>> {
  const verdicts = new Map<number, Verdict>();
  for (const r of records) {
    if (abort.aborted) break;
    try {
      const answer = await renderSample(sourceId, sampleOf(r), otlp ? r.signal || 'logs' : undefined, abort);
      const mine = answer.tables.find((t) => t.sinkId === sinkId);
      verdicts.set(r.offset, mine?.filtered ? { state: 'filtered' } : { state: 'kept' });
    } catch (err) {
      if (abort.aborted) break;
      verdicts.set(r.offset, { state: 'failed', message: err instanceof Error ? err.message : String(err) });
    }
  }
  return verdicts;
}

function VerdictText({ verdict }: { verdict?: Verdict }) {
  if (!verdict) return <span class="muted">—</span>;
  if (verdict.state === 'kept') return <span class="ok">kept</span>;
  if (verdict.state === 'filtered') return <span class="muted">filtered out</span>;
  // A filter's failure says so itself (`Filter failed: ...`); another failure is the mapping's (of this sink or another).
  return <span class="error">{isFilterFailure(verdict.message) ? verdict.message : `not mapped: ${verdict.message}`}</span>;
}

/**
 * The source's recent records, each with a button that makes it the sample. `sinkId` (a sink
 * with a filter): a button checks every listed record against the sink (`version`: again once
 * the sink changed) and marks those its filter would skip.
 */
function RecentRecords({ sourceId, sinkId, version, otlp, picked, onPick }: {
  sourceId: string; sinkId?: string; version: number; otlp: boolean; picked?: number; onPick: (r: RecentRecord) => void;
}) {
  const { data, error, reload } = useLoad(
    () => api<RecentRecordsAnswer>('GET', `${BRANCH}/sources/${encodeURIComponent(sourceId)}/records?limit=10`),
    [sourceId],
  );
  const [busy, setBusy] = useState(false);
  const [verdicts, setVerdicts] = useState<Map<number, Verdict> | undefined>(undefined);
  const [checking, setChecking] = useState(false);
  const checkRun = useRef<AbortController | undefined>(undefined);
  // Verdicts are of the records and the sink version they were made for.
  useEffect(() => {
    checkRun.current?.abort();
    setVerdicts(undefined);
    setChecking(false);
  }, [data, version, sinkId]);
  useEffect(() => () => checkRun.current?.abort(), []);
  const check = async () => {
    if (!data || !sinkId) return;
    checkRun.current?.abort();
    const abort = (checkRun.current = new AbortController());
    setChecking(true);
    try {
      const found = await checkRecords(sourceId, sinkId, data.records, otlp, abort.signal);
      if (!abort.signal.aborted) setVerdicts(found);
    } finally {
      if (!abort.signal.aborted) setChecking(false);
    }
  };
  const refresh = async () => {
    setBusy(true);
    try {
      await reload();
    } catch {
      // Shown by ErrorText below.
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="recent-heading" class="recent">
      <div class="actions">
        <h3 id="recent-heading">Recent records of the source</h3>
        <button type="button" class="small" onClick={refresh} disabled={busy}>Refresh</button>
        {sinkId && data && data.records.length > 0 && (
          <button type="button" class="small" onClick={check} disabled={checking}>Check against the filter</button>
        )}
        {checking && <span class="muted" aria-live="polite">Checking…</span>}
      </div>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && data.records.length === 0 && <p class="muted">The source has not received any record yet (or the log no longer keeps them).</p>}
      {data && data.records.length > 0 && (
        <div class="scroll">
          <table class="list" aria-labelledby="recent-heading">
            <thead>
              <tr><th scope="col">Received</th><th scope="col">Body</th>{verdicts && <th scope="col">Filter</th>}<th scope="col"><span class="visually-hidden">Action</span></th></tr>
            </thead>
            <tbody>
              {data.records.map((r) => (
                <tr key={`${r.partition ?? 0}-${r.offset}`} aria-current={picked === r.offset ? 'true' : undefined}
                  class={verdicts?.get(r.offset)?.state === 'filtered' ? 'filtered' : undefined}>
                  <td><Time iso={r.receivedAt} /><div class="hint">offset {r.offset}</div></td>
                  <td><code class="excerpt">{r.bodyEncoding === 'base64' ? `(binary, base64) ${r.body}` : r.body}</code></td>
                  {verdicts && <td><VerdictText verdict={verdicts.get(r.offset)} /></td>}
                  <td><button type="button" class="small" onClick={() => onPick(r)} aria-label={`Use record ${r.offset}`}>Use</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
