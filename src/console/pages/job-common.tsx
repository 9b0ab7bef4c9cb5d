/**
 * What the jobs and configurations pages share: the Queue API's job (its shape: the API
 * contract's, src/contract/queue-jobs.ts), its status badge, durations, a poll that stops once
 * the data says so, and starting a job (POST /jobs).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { href } from '../router';
import { ErrorText } from '../widgets/common';
import type { JobJson, JobResultJson } from '../../contract/queue-jobs';

/** The job's result object ([] when empty, as the reference serialises it). */
export function jobResult(job: JobJson): JobResultJson {
  return Array.isArray(job.result) ? {} : job.result;
}

export const JOB_STATUSES = ['created', 'waiting', 'processing', 'terminating', 'success', 'error', 'warning', 'terminated', 'cancelled'];

/** Statuses in which a kill does something (POST /jobs/{id}/kill answers 202). */
export function killable(job: JobJson): boolean {
  return !job.isFinished && job.status !== 'terminating' && job.desiredStatus !== 'terminating';
}

export function JobStatus({ status }: { status: string }) {
  const kind = status === 'success' ? 'on'
    : status === 'error' || status === 'terminated' || status === 'cancelled' ? 'bad'
      : status === 'warning' ? 'off'
        : 'run';
  return <span class={`badge ${kind}`}>{status}</span>;
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${seconds} s`;
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export interface Polled<T> {
  data: T | undefined;
  error: unknown;
  reload: () => Promise<void>;
}

/**
 * Loads, then loads again after `next(data)` ms for as long as it answers a number (a running
 * job: every second; a finished one: never). After a failed load it tries again, slower.
 */
export function usePoll<T>(load: () => Promise<T>, deps: unknown[], next: (data: T) => number | undefined): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  const nextRef = useRef(next);
  nextRef.current = next;
  const kick = useRef<() => Promise<void>>(async () => undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let failures = 0;
    const tick = async (): Promise<void> => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      let wait: number | undefined;
      try {
        const value = await loadRef.current();
        if (stopped) return;
        setData(value);
        setError(undefined);
        failures = 0;
        wait = nextRef.current(value);
      } catch (err) {
        if (stopped) return;
        setError(err);
        failures++;
        wait = Math.min(2000 * 2 ** failures, 60_000);
      }
      if (!stopped && wait !== undefined) timer = setTimeout(() => void tick(), wait);
    };
    kick.current = tick;
    setData(undefined);
    setError(undefined);
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, deps);
  return { data, error, reload: () => kick.current() };
}

/** Starts a job of a configuration (POST /jobs) and links to it; the API's error beside the button. */
export function RunButton({ componentId, configId, label = 'Run' }: { componentId: string; configId: string; label?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [job, setJob] = useState<JobJson | undefined>(undefined);
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      setJob(await api<JobJson>('POST', '/jobs', { json: { component: componentId, config: configId, mode: 'run' } }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="run-button">
      <button type="button" class="primary" disabled={busy} onClick={run}>{label}</button>
      {job && (
        <span role="status">
          {' '}Job <a href={href('jobs', job.id)}>{job.id}</a> started: <a href={href('jobs', job.id)}>follow it</a>
        </span>
      )}
      <ErrorText error={error} />
    </span>
  );
}
