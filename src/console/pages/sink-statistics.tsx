/**
 * A sink's statistics (#/sources/<s>/sinks/<k>/statistics), live: polled every 2.5 s.
 * Cards of records and bytes per level (statistics/total, with mappingFailures.count while
 * there are failed records, and filtered.count once the sink's filter skipped any), charts of the
 * last hours (the server's samples, statistics/history, then each poll of this visit adds a
 * point) with the rates of the last polls beside them, the
 * lag from GET /metrics, the files with their states (statistics/files) and the failed imports
 * (?failedFiles=true), and "Clear statistics" for the master token.
 */
import './sink-statistics.css';
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, BRANCH } from '../api';
import { href } from '../router';
import { useLoad } from '../widgets/load';
import { ActionButton, ErrorText, Loading, Time, WriteOnly, formatBytes, formatCount } from '../widgets/common';
import { Chart, type ChartSeries } from '../widgets/chart';
import { readLag, type LagReading } from './sink-statistics-metrics';
import type { FileStatistics, Level, SinkFilesAnswer, SinkStatisticsHistoryAnswer, SinkStatisticsTotalAnswer } from '../../contract/statistics';

interface Snapshot {
  at: number;
  total: SinkStatisticsTotalAnswer;
  files: FileStatistics[];
  failedFiles: FileStatistics[];
  lag: LagReading | undefined;
}

/** One poll's numbers, kept in the browser to draw the charts. */
export interface Point {
  /** Unix seconds. */
  t: number;
  received: number;
  imported: number;
  failed: number;
  lagRecords: number | null;
  lagSeconds: number | null;
}

const POLL_MS = 2500;
/** The server's 6 hours of samples (720) and about 50 minutes of polls; the oldest points go first. */
const MAX_POINTS = 1920;
/** Rates are computed over the polls of the last 30 s. */
const RATE_WINDOW_S = 30;
const FILES_SHOWN = 50;
const LEVELS: { level: Level; label: string; hint: string }[] = [
  { level: 'local', label: 'Local', hint: 'slices on the node\'s disk' },
  { level: 'staging', label: 'Staging', hint: 'uploaded, waiting for import' },
  { level: 'target', label: 'Target', hint: 'imported into the table' },
];

const enc = encodeURIComponent;

export function statisticsPath(sourceId: string, sinkId: string): string {
  return `${BRANCH}/sources/${enc(sourceId)}/sinks/${enc(sinkId)}/statistics`;
}

/** Records per second of one series over the points of the last RATE_WINDOW_S; null without two points or after a reset. */
export function rate(points: Point[], pick: (p: Point) => number | null): number | null {
  if (points.length < 2) return null;
  const last = points[points.length - 1];
  let first = points.length - 2;
  while (first > 0 && last.t - points[first - 1].t <= RATE_WINDOW_S) first--;
  const a = pick(points[first]);
  const b = pick(last);
  const dt = last.t - points[first].t;
  if (a === null || b === null || dt <= 0 || b < a) return null;
  return (b - a) / dt;
}

function formatRate(r: number | null): string {
  if (r === null) return '—';
  return `${r.toLocaleString(undefined, { maximumFractionDigits: r < 10 ? 2 : 0 })}/s`;
}

function formatSeconds(v: number): string {
  return `${v.toLocaleString(undefined, { maximumFractionDigits: 1 })} s`;
}

const RECORD_SERIES: ChartSeries[] = [
  // Wider and lighter: while everything is imported, the imported line runs on top of it.
  { label: 'Received', color: '#7fb0e8', width: 5, integer: true },
  { label: 'Imported', color: '#1a7f37', integer: true },
  { label: 'Failed', color: '#b42318', dash: [6, 4], integer: true },
];
const LAG_SERIES: ChartSeries[] = [
  { label: 'Lag (records)', color: '#9a6700', scale: 'records', integer: true, format: (v) => v.toLocaleString(undefined, { maximumFractionDigits: 0 }) },
  { label: 'Lag (seconds)', color: '#6f42c1', scale: 'seconds', format: formatSeconds },
];

export function SinkStatistics({ sourceId, sinkId }: { sourceId: string; sinkId: string }) {
  const [points, setPoints] = useState<Point[]>([]);
  // Once /metrics answers 401 (a server with --metrics-token) it is not asked again.
  const metricsProtected = useRef(false);
  const base = statisticsPath(sourceId, sinkId);

  const { data, error, reload } = useLoad<Snapshot>(async () => {
    const lagPromise: Promise<LagReading | undefined> = metricsProtected.current
      ? Promise.resolve({ kind: 'protected' })
      : readLag(sourceId, sinkId).catch((err: unknown): LagReading => ({ kind: 'error', message: err instanceof Error ? err.message : String(err) }));
    const [total, files, failed, lag] = await Promise.all([
      api<SinkStatisticsTotalAnswer>('GET', `${base}/total`),
      api<SinkFilesAnswer>('GET', `${base}/files`),
      api<SinkFilesAnswer>('GET', `${base}/files?failedFiles=true`),
      lagPromise,
    ]);
    if (lag?.kind === 'protected') metricsProtected.current = true;
    return { at: Date.now(), total, files: files.files, failedFiles: failed.files, lag };
  }, [sourceId, sinkId], POLL_MS);

  useEffect(() => {
    setPoints([]);
    metricsProtected.current = false;
    // The last hours from the server (its samples every 30 s), before the points of this visit.
    let current = true;
    api<SinkStatisticsHistoryAnswer>('GET', `${base}/history`).then((history) => {
      if (!current) return;
      const past: Point[] = history.points.map((p) => ({ ...p, lagRecords: null, lagSeconds: null }));
      setPoints((live) => [...past.filter((p) => live.length === 0 || p.t < live[0].t), ...live].slice(-MAX_POINTS));
    }, () => undefined);
    return () => {
      current = false;
    };
  }, [sourceId, sinkId]);

  useEffect(() => {
    if (!data) return;
    const lag = data.lag?.kind === 'lag' ? data.lag.lag : undefined;
    const point: Point = {
      t: data.at / 1000,
      received: data.total.total?.recordsCount ?? 0,
      imported: data.total.levels.target?.recordsCount ?? 0,
      failed: data.total.mappingFailures?.count ?? 0,
      lagRecords: lag ? lag.records : null,
      lagSeconds: lag ? lag.seconds : null,
    };
    setPoints((prev) => [...prev.slice(-(MAX_POINTS - 1)), point]);
  }, [data]);

  const clear = async () => {
    await api('DELETE', `${base}/clear`);
    setPoints([]);
    await reload();
  };

  return (
    <section class="sink-stats" aria-labelledby="sink-stats-title">
      <div class="sink-stats-head">
        <h2 id="sink-stats-title">Statistics</h2>
        <p class="muted" aria-live="off">
          Live, every {POLL_MS / 1000} s{data && <> · updated <Time iso={new Date(data.at).toISOString()} /></>}
        </p>
        <WriteOnly>
          <ActionButton
            class="danger"
            confirm={`Clear the statistics of sink "${sinkId}"? The counts start again from zero; the rows stay in the table.`}
            onAction={clear}
          >
            Clear statistics
          </ActionButton>
        </WriteOnly>
      </div>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <LevelCards total={data.total} failuresHref={href('sources', sourceId, 'sinks', sinkId, 'failures')} />
          <Charts points={points} lag={data.lag} />
          <Files files={data.files} failed={data.failedFiles} />
        </>
      )}
    </section>
  );
}

/** "1 record", "3 records" (the number grouped). */
export function Records({ n }: { n: number }) {
  return <>{formatCount(n)} <span class="unit">{n === 1 ? 'record' : 'records'}</span></>;
}

function Card({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="card" role="group" aria-labelledby={id}>
      <div id={id} class="card-label">{label}{hint && <span class="hint"> · {hint}</span>}</div>
      {children}
    </div>
  );
}

function LevelCards({ total, failuresHref }: { total: SinkStatisticsTotalAnswer; failuresHref: string }) {
  const all = total.total;
  const failed = total.mappingFailures?.count ?? 0;
  const filtered = total.filtered?.count;
  return (
    <div class="cards stats-cards">
      <Card id="stats-card-total" label="Received" hint="all levels">
        <div class="value"><Records n={all?.recordsCount ?? 0} /></div>
        <div class="muted">{formatBytes(all?.uncompressedSize ?? 0)} uncompressed</div>
        <div class="muted">last <Time iso={all?.lastRecordAt} /></div>
      </Card>
      {LEVELS.map(({ level, label, hint }) => {
        const l = total.levels[level];
        return (
          <Card key={level} id={`stats-card-${level}`} label={label} hint={hint}>
            <div class="value"><Records n={l?.recordsCount ?? 0} /></div>
            <div class="muted">
              {formatBytes(l?.compressedSize ?? 0)}{level === 'local' ? '' : ' compressed'}
              {level !== 'local' && <> · {formatBytes(l?.uncompressedSize ?? 0)} raw</>}
            </div>
            <div class="muted">last <Time iso={l?.lastRecordAt} /></div>
          </Card>
        );
      })}
      <Card id="stats-card-failures" label="Mapping failures" hint="failed now">
        <div class={`value${failed > 0 ? ' bad-value' : ''}`}><Records n={failed} /></div>
        <div class="muted">{failed > 0 ? <a href={failuresHref}>See the failures</a> : 'none'}</div>
      </Card>
      {filtered !== undefined && (
        <Card id="stats-card-filtered" label="Filtered" hint="skipped by the filter">
          <div class="value"><Records n={filtered} /></div>
          <div class="muted">handled, not written</div>
        </Card>
      )}
    </div>
  );
}

function Charts({ points, lag }: { points: Point[]; lag: LagReading | undefined }) {
  const times = useMemo(() => points.map((p) => p.t), [points]);
  const records = useMemo(() => [points.map((p) => p.received), points.map((p) => p.imported), points.map((p) => p.failed)], [points]);
  const lags = useMemo(() => [points.map((p) => p.lagRecords), points.map((p) => p.lagSeconds)], [points]);
  const last = points[points.length - 1];
  return (
    <section aria-labelledby="stats-over-time">
      <h3 id="stats-over-time">Since this page was opened</h3>
      <div class="stats-chart-row">
        <Chart title="Records received, imported and failed" series={RECORD_SERIES} times={times} values={records} emptyText="No poll yet." />
        <aside class="stats-rates" aria-label="Rates">
          <h4>Rates <span class="hint">last {RATE_WINDOW_S} s</span></h4>
          <dl>
            <dt>Received</dt><dd>{formatRate(rate(points, (p) => p.received))}</dd>
            <dt>Imported</dt><dd>{formatRate(rate(points, (p) => p.imported))}</dd>
            <dt>Failed</dt><dd>{formatRate(rate(points, (p) => p.failed))}</dd>
          </dl>
          <p class="hint">Records per second between the polls of the last {RATE_WINDOW_S} seconds.</p>
        </aside>
      </div>
      {lag?.kind === 'protected' ? (
        <p class="muted stats-note" role="note">
          The lag chart is hidden: this server protects <code>/metrics</code> with a metrics token (<code>--metrics-token</code>), which the
          console does not send.
        </p>
      ) : (
        <div class="stats-chart-row">
          <Chart title="Lag: records not mapped yet, and the age of the oldest" series={LAG_SERIES} times={times} values={lags} emptyText="No poll yet." />
          <aside class="stats-rates" aria-label="Lag now">
            <h4>Lag now</h4>
            <dl>
              <dt>Records</dt><dd>{last?.lagRecords === null || last === undefined ? '—' : formatCount(last.lagRecords)}</dd>
              <dt>Oldest</dt><dd>{last?.lagSeconds === null || last === undefined ? '—' : formatSeconds(last.lagSeconds)}</dd>
            </dl>
            {lag?.kind === 'none' && <p class="hint">This node has no lag for the sink (it is disabled, or another cluster node maps it).</p>}
            {lag?.kind === 'error' && <p class="hint">The lag could not be read: {lag.message}</p>}
            <p class="hint">From <code>sluice_sink_lag_records</code> and <code>sluice_sink_lag_seconds</code> of <code>GET /metrics</code>.</p>
          </aside>
        </div>
      )}
    </section>
  );
}

function FileState({ file }: { file: FileStatistics }) {
  const kind = file.state === 'imported' ? 'on' : file.retryReason ? 'bad' : 'off';
  return <span class={`badge ${kind}`}>{file.state}</span>;
}

/** Not imported first (what is moving), then the newest. */
function fileOrder(a: FileStatistics, b: FileStatistics): number {
  const rank = (f: FileStatistics) => (f.state === 'imported' ? 1 : 0);
  return rank(a) - rank(b) || (a.openedAt < b.openedAt ? 1 : a.openedAt > b.openedAt ? -1 : 0);
}

function Files({ files, failed }: { files: FileStatistics[]; failed: FileStatistics[] }) {
  const shown = [...files].sort(fileOrder).slice(0, FILES_SHOWN);
  return (
    <>
      {failed.length > 0 && (
        <section aria-labelledby="stats-failed-files">
          <h3 id="stats-failed-files">Failed imports <span class="badge bad">{failed.length}</span></h3>
          <p class="hint">Files whose import failed; each is retried after the time shown.</p>
          <div class="scroll">
            <table class="list" aria-label="Failed imports">
              <thead>
                <tr><th scope="col">Opened</th><th scope="col">State</th><th scope="col">Attempt</th><th scope="col">Reason</th><th scope="col">Next retry</th></tr>
              </thead>
              <tbody>
                {failed.map((f, i) => (
                  <tr key={`${f.openedAt}/${i}`}>
                    <td><Time iso={f.openedAt} /></td>
                    <td><FileState file={f} /></td>
                    <td>{f.retryAttempt ?? '—'}</td>
                    <td class="error stats-reason">{f.retryReason ?? '—'}</td>
                    <td><Time iso={f.retryAfter} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      <section aria-labelledby="stats-files">
        <h3 id="stats-files">Files</h3>
        {files.length > FILES_SHOWN && <p class="hint">The {FILES_SHOWN} newest of {files.length} files, those not imported yet first.</p>}
        <div class="scroll">
          <table class="list" aria-label="Files">
            <thead>
              <tr>
                <th scope="col">State</th><th scope="col">Opened</th><th scope="col">Closing</th><th scope="col">Importing</th><th scope="col">Imported</th>
                <th scope="col" class="num">Records</th><th scope="col" class="num">Size</th><th scope="col">Retry</th>
              </tr>
            </thead>
            <tbody>
              {shown.length === 0 && <tr><td colSpan={8} class="muted">No files yet: they open with the first record.</td></tr>}
              {shown.map((f, i) => {
                const t = f.statistics?.total;
                return (
                  <tr key={`${f.openedAt}/${i}`}>
                    <td><FileState file={f} /></td>
                    <td><Time iso={f.openedAt} /></td>
                    <td><Time iso={f.closingAt} /></td>
                    <td><Time iso={f.importingAt} /></td>
                    <td><Time iso={f.importedAt} /></td>
                    <td class="num">{f.statistics ? formatCount(t?.recordsCount ?? 0) : <span class="muted">no figures yet</span>}</td>
                    <td class="num">{t ? formatBytes(t.compressedSize) : '—'}</td>
                    <td>
                      {f.retryAttempt ? (
                        <span class="error">attempt {f.retryAttempt}: {f.retryReason} (next <Time iso={f.retryAfter} />)</span>
                      ) : (
                        <span class="muted">—</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        {shown.some((f) => !f.statistics) && <p class="hint">No figures yet: no statistics have been recorded for the file.</p>}
      </section>
    </>
  );
}
