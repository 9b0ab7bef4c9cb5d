/**
 * One job (#/jobs/<jobId>): its details, followed every second until it is finished, its log
 * (GET /v2/storage/events?runId=...) growing live while it runs, and Kill for a job that has
 * not finished (master token only).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { href } from '../router';
import { ActionButton, CopyButton, ErrorText, Loading, Time, WriteOnly, countOf } from '../widgets/common';
import { JobStatus, formatDuration, jobResult, killable, usePoll } from './job-common';
import type { JobJson } from '../../contract/queue-jobs';
import type { StorageEvent } from '../../contract/storage-events';

export function JobPage({ jobId }: { jobId: string }) {
  const { data: job, error, reload } = usePoll(
    () => api<JobJson>('GET', `/jobs/${encodeURIComponent(jobId)}`),
    [jobId],
    (j) => (j.isFinished ? undefined : 1000),
  );
  return (
    <>
      <p><a href={href('jobs')}>← Jobs</a></p>
      <h1>
        Job {jobId} <CopyButton text={jobId} label="job id" /> {job && <JobStatus status={job.status} />}
      </h1>
      <ErrorText error={error} />
      {!job && !error && <Loading />}
      {job && <JobBody job={job} reload={reload} />}
    </>
  );
}

function JobBody({ job, reload }: { job: JobJson; reload: () => Promise<void> }) {
  const result = jobResult(job);
  const tables = result.output?.tables ?? [];
  return (
    <>
      {killable(job) && (
        <WriteOnly>
          <div class="actions">
            <ActionButton
              class="danger"
              confirm={`Kill job ${job.id}?`}
              onAction={async () => {
                await api('POST', `/jobs/${encodeURIComponent(job.id)}/kill`);
                await reload();
              }}
            >
              Kill
            </ActionButton>
          </div>
        </WriteOnly>
      )}
      <div class="grid2">
        <section aria-labelledby="job-details">
          <h2 id="job-details">Details</h2>
          <dl class="props">
            <dt>Component</dt><dd><code>{job.component}</code></dd>
            <dt>Configuration</dt>
            <dd>{job.config ? <a href={href('configurations', job.component, job.config)}>{job.config}</a> : <span class="muted">inline (configData)</span>}
              {result.configVersion !== undefined && <span class="muted"> version {result.configVersion}</span>}</dd>
            {job.configRowIds && job.configRowIds.length > 0 && <><dt>Rows</dt><dd>{job.configRowIds.join(', ')}</dd></>}
            <dt>Mode</dt><dd>{job.mode}</dd>
            <dt>Status</dt><dd><JobStatus status={job.status} />{job.desiredStatus === 'terminating' && !job.isFinished && <span class="muted"> (being killed)</span>}</dd>
            <dt>Run id</dt><dd><code>{job.runId}</code></dd>
            <dt>Created</dt><dd><Time iso={job.createdTime} /></dd>
            <dt>Started</dt><dd><Time iso={job.startTime} /></dd>
            <dt>Ended</dt><dd><Time iso={job.endTime} /></dd>
            <dt>Duration</dt><dd>{job.startTime ? formatDuration(job.durationSeconds) : '—'}</dd>
            {job.token && <><dt>Started by</dt><dd>{job.token.description || `token ${job.token.id}`}</dd></>}
          </dl>
        </section>
        <section aria-labelledby="job-result">
          <h2 id="job-result">Result</h2>
          {!job.isFinished && !result.message && <p class="muted">The job has not finished yet.</p>}
          {result.message && (
            <p class={result.error ? 'error' : undefined} role={result.error ? 'alert' : undefined}>{result.message}</p>
          )}
          {result.error && (
            <dl class="props">
              <dt>Error</dt><dd>{result.error.type === 'application' ? 'application error (details in the log)' : `${result.error.type ?? ''} error`}</dd>
              {result.error.exceptionId && <><dt>Exception id</dt><dd><code>{result.error.exceptionId}</code></dd></>}
            </dl>
          )}
          {tables.length > 0 && (
            <>
              <h3>Output tables</h3>
              <ul>
                {tables.map((t) => (
                  <li key={t.id}><a href={href('tables', t.id)}>{t.id}</a>{t.rows !== undefined && <span class="muted"> ({countOf(t.rows, 'row')})</span>}</li>
                ))}
              </ul>
            </>
          )}
          {result.variables && result.variables.length > 0 && (
            <>
              <h3>Variables</h3>
              <dl class="props">
                {result.variables.map((v) => [<dt key={`n${v.name}`}>{v.name}</dt>, <dd key={`v${v.name}`}><code>{v.value}</code></dd>])}
              </dl>
            </>
          )}
        </section>
      </div>
      <JobLog runId={job.runId} finished={job.isFinished} />
    </>
  );
}

const PAGE = 1000;

/** The job's events, oldest first; new ones fetched (sinceId) every second until the job has finished. */
function JobLog({ runId, finished }: { runId: string; finished: boolean }) {
  const [events, setEvents] = useState<StorageEvent[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const finishedRef = useRef(finished);
  finishedRef.current = finished;
  const wake = useRef<() => void>(() => undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let all: StorageEvent[] = [];
    let last: string | undefined;
    let idle = true;
    setEvents(undefined);
    const tick = async () => {
      idle = false;
      timer = undefined;
      // A load that starts after the job finished sees all of its events: the last one.
      const final = finishedRef.current;
      let wait = 1000;
      try {
        for (;;) {
          const since = last === undefined ? '' : `&sinceId=${encodeURIComponent(last)}`;
          const page = await api<StorageEvent[]>('GET', `/v2/storage/events?runId=${encodeURIComponent(runId)}&sortOrder=asc&limit=${PAGE}${since}`);
          if (stopped) return;
          if (page.length > 0) {
            last = page[page.length - 1].id;
            all = [...all, ...page];
          }
          if (page.length < PAGE) break;
        }
        setEvents(all);
        setError(undefined);
        if (final) {
          idle = true;
          return;
        }
      } catch (err) {
        if (stopped) return;
        setError(err);
        wait = 5000;
      }
      if (!stopped) timer = setTimeout(() => void tick(), wait);
    };
    // The job finished while the log was idle-waiting: fetch the rest now.
    wake.current = () => {
      if (idle) void tick();
      else if (timer) {
        clearTimeout(timer);
        void tick();
      }
    };
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [runId]);
  useEffect(() => {
    if (finished) wake.current();
  }, [finished]);
  // Keep the newest line in view while the log grows (unless the reader scrolled up).
  const box = useRef<HTMLDivElement>(null);
  const count = events?.length ?? 0;
  useEffect(() => {
    const el = box.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [count]);
  return (
    <section aria-labelledby="job-log">
      <h2 id="job-log">Log {!finished && <span class="muted">(live)</span>}</h2>
      <ErrorText error={error} />
      {!events && !error && <Loading />}
      {events && events.length === 0 && <p class="muted">No log lines yet.</p>}
      {events && events.length > 0 && (
        <div class="job-log" ref={box} role="log" aria-label="Job log">
          <table class="list">
            <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Component</th><th scope="col">Message</th></tr></thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id} class={e.type}>
                  <td><Time iso={e.created} /></td>
                  <td><span class={`badge ${e.type === 'error' ? 'bad' : e.type === 'warn' ? 'off' : e.type === 'success' ? 'on' : ''}`}>{e.type}</span></td>
                  <td><code>{e.component}</code>{e.token && <span class="muted"> posted by token {e.token.name} ({e.token.id})</span>}</td>
                  <td class="message">{e.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
