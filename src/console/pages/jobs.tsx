/**
 * Jobs (the Queue API): the list with filters (GET /search/jobs), newest first and refreshed
 * live, and a form to run a configuration; one job in job-detail.tsx.
 * Routes: #/jobs[?component=&config=&status=&offset=], #/jobs/<jobId>.
 */
import './table-pages.css';
import { useState } from 'preact/hooks';
import type { Route } from '../router';
import { href } from '../router';
import { api } from '../api';
import { useLoad } from '../widgets/load';
import { ErrorText, Loading, Time, WriteOnly } from '../widgets/common';
import { JOB_STATUSES, JobStatus, formatDuration, jobResult } from './job-common';
import type { JobJson } from '../../contract/queue-jobs';
import { JobPage } from './job-detail';
import { RunJobForm } from './job-run';

const PAGE = 50;
const FILTERS = ['component', 'config', 'status'] as const;

export function JobsPage({ route }: { route: Route }) {
  const [, jobId] = route.parts;
  if (jobId !== undefined) return <JobPage jobId={jobId} />;
  return <JobList query={route.query} />;
}

function listHref(params: Record<string, string>): string {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== ''));
  const s = q.toString();
  return href('jobs') + (s ? `?${s}` : '');
}

function JobList({ query }: { query: URLSearchParams }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const offset = Math.max(0, Number(query.get('offset') ?? 0) || 0);
  const search = new URLSearchParams({ limit: String(PAGE), offset: String(offset), sortBy: 'id', sortOrder: 'desc' });
  for (const f of FILTERS) if (filters[f]) search.set(f, filters[f]);
  const { data, error } = useLoad(() => api<JobJson[]>('GET', `/search/jobs?${search}`), [search.toString()], 3000);
  const filtered = FILTERS.some((f) => filters[f]);
  return (
    <>
      <h1>Jobs</h1>
      <WriteOnly>
        <RunJobForm />
      </WriteOnly>
      <Filters key={query.toString()} initial={filters} />
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <div class="scroll">
            <table class="list">
              <thead>
                <tr>
                  <th scope="col">Job</th><th scope="col">Component</th><th scope="col">Configuration</th><th scope="col">Status</th>
                  <th scope="col">Created</th><th scope="col">Duration</th><th scope="col">Result</th>
                </tr>
              </thead>
              <tbody>
                {data.length === 0 && <tr><td colSpan={7} class="muted">{filtered ? 'No job matches these filters.' : 'No jobs yet.'}</td></tr>}
                {data.map((job) => (
                  <tr key={job.id}>
                    <td><a href={href('jobs', job.id)}>{job.id}</a></td>
                    <td><code>{job.component}</code></td>
                    <td>{job.config ? <a href={href('configurations', job.component, job.config)}>{job.config}</a> : <span class="muted">inline</span>}</td>
                    <td><JobStatus status={job.status} /></td>
                    <td><Time iso={job.createdTime} /></td>
                    <td>{job.startTime ? formatDuration(job.durationSeconds) : '—'}</td>
                    <td>{jobResult(job).message ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="actions" aria-label="Pages of jobs">
            {offset > 0 && <a class="button" href={listHref({ ...filters, offset: String(Math.max(0, offset - PAGE)) })}>Newer</a>}
            {data.length === PAGE && <a class="button" href={listHref({ ...filters, offset: String(offset + PAGE) })}>Older</a>}
            <span class="muted">Refreshed every few seconds.</span>
          </nav>
        </>
      )}
    </>
  );
}

function Filters({ initial }: { initial: Record<string, string> }) {
  const [values, setValues] = useState(initial);
  const set = (name: string) => (e: Event) => setValues({ ...values, [name]: (e.target as HTMLInputElement | HTMLSelectElement).value });
  const apply = (event: Event) => {
    event.preventDefault();
    location.hash = listHref(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.trim()])));
  };
  return (
    <form class="filters" onSubmit={apply} aria-label="Filter jobs">
      <label class="field">
        Component
        <input value={values.component} placeholder="sluice.echo" onInput={set('component')} />
      </label>
      <label class="field">
        Configuration id
        <input value={values.config} onInput={set('config')} />
      </label>
      <label class="field">
        Status
        <select value={values.status} onChange={set('status')}>
          <option value="">any</option>
          {JOB_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
      </label>
      <div class="actions">
        <button type="submit">Search</button>
        <a href={href('jobs')}>Clear</a>
      </div>
    </form>
  );
}
