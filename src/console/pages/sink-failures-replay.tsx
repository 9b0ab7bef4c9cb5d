/**
 * Replay of a sink's records from the event log (POST .../sinks/<k>/replay): since a local
 * time, all records or only the failed ones, optionally a full remap. The API answers a task;
 * this follows it (GET /v1/tasks/...) and shows its outputs (scanned of total offsets,
 * written, failed, skipped) until it ends, then its result or error. Master token only.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, BRANCH } from '../api';
import { ErrorText, Field, Time, formatCount } from '../widgets/common';
import type { Task } from '../../contract/tasks';
import type { ReplayBody, ReplayProgress as ReplayOutputs } from '../../contract/failures';

/** The replay's task: its outputs are its progress (none before the first report). */
type ReplayTask = Task<Partial<ReplayOutputs>>;

const enc = encodeURIComponent;

/** A Date as the value of an <input type="datetime-local"> (the browser's zone, to the minute). */
export function toLocalInput(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${p(date.getMonth() + 1)}-${p(date.getDate())}T${p(date.getHours())}:${p(date.getMinutes())}`;
}

/** The value of a datetime-local input (local time) as an RFC 3339 UTC time; undefined when it is not a time. */
export function localInputToIso(value: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export function SinkReplay({ sourceId, sinkId, onFinished }: { sourceId: string; sinkId: string; onFinished?: () => void }) {
  const [since, setSince] = useState(() => toLocalInput(new Date(Date.now() - 60 * 60_000)));
  const [records, setRecords] = useState<'all' | 'failed'>('failed');
  const [fullRemap, setFullRemap] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [task, setTask] = useState<ReplayTask | undefined>(undefined);
  const [pollError, setPollError] = useState<unknown>(undefined);
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);

  const follow = async (started: ReplayTask) => {
    const taskPath = new URL(started.url, location.href).pathname;
    let current = started;
    let delay = 300;
    while (alive.current && current.status === 'processing') {
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 1.5, 1500);
      if (!alive.current) return;
      try {
        current = await api<ReplayTask>('GET', taskPath);
        setPollError(undefined);
        setTask(current);
      } catch (err) {
        // The task goes on on the server; keep asking, a little slower.
        setPollError(err);
        delay = Math.min(delay * 2, 10_000);
      }
    }
    if (alive.current) onFinished?.();
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    const iso = localInputToIso(since);
    if (!iso) {
      setError(new ApiError(400, 'Enter the time to replay from.'));
      return;
    }
    if (fullRemap && !confirm('A full remap writes every record of the range again, also those already in the table: the table gets duplicate rows. Start it?')) return;
    setBusy(true);
    try {
      const started = await api<ReplayTask>('POST', `${BRANCH}/sources/${enc(sourceId)}/sinks/${enc(sinkId)}/replay`, {
        json: { since: iso, records, fullRemap } satisfies ReplayBody,
      });
      setTask(started);
      setBusy(false);
      await follow(started);
    } catch (err) {
      setError(err);
    } finally {
      if (alive.current) setBusy(false);
    }
  };

  const running = task?.status === 'processing';
  return (
    <section class="panel replay" aria-labelledby="replay-title">
      <h3 id="replay-title">Replay from the event log</h3>
      <p class="hint">
        Reads the source's event log from the first record received at or after the time, up to what the sink has consumed, through
        the sink's current mapping. Records already written are skipped unless a full remap is asked. Bounded by the log's retention.
      </p>
      <form class="stack replay-form" onSubmit={submit}>
        <div class="grid2">
          <Field label="Since" hint="Your local time: the first receive time to replay.">
            <input type="datetime-local" required value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} />
          </Field>
          <Field label="Records">
            <select value={records} onChange={(e) => setRecords((e.target as HTMLSelectElement).value as 'all' | 'failed')}>
              <option value="failed">Failed: only records that failed mapping</option>
              <option value="all">All: failed, and records the sink never consumed</option>
            </select>
          </Field>
        </div>
        <label class="field check">
          <input type="checkbox" checked={fullRemap} onChange={(e) => setFullRemap((e.target as HTMLInputElement).checked)} />
          <span>
            Full remap <span class="hint">— also write again the records already in the table (duplicate rows, on purpose).</span>
          </span>
        </label>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || running}>{running ? 'Replaying…' : 'Start replay'}</button>
        </div>
        <ErrorText error={error} />
      </form>
      {task && <ReplayProgress task={task} pollError={pollError} />}
    </section>
  );
}

function ReplayProgress({ task, pollError }: { task: ReplayTask; pollError: unknown }) {
  const o = task.outputs ?? {};
  const total = o.total ?? 0;
  const scanned = o.scanned ?? 0;
  const badge = task.status === 'success' ? 'on' : task.status === 'error' ? 'bad' : 'off';
  return (
    <div class="replay-progress" role="status" aria-live="polite" aria-label="Replay task">
      <div>
        Task <code>{task.taskId}</code> <span class={`badge ${badge}`}>{task.status}</span>{' '}
        <span class="muted">started <Time iso={task.createdAt} />{task.finishedAt && <>, finished <Time iso={task.finishedAt} /></>}</span>
      </div>
      {total > 0 || task.isFinished ? (
        <progress max={Math.max(total, 1)} value={task.isFinished && task.status === 'success' ? Math.max(total, 1) : scanned} aria-label="Replay progress" />
      ) : (
        <progress aria-label="Replay progress" />
      )}
      <p class="replay-outputs">
        Scanned {formatCount(scanned)} of {formatCount(total)} offsets
        {o.fromOffset !== undefined && o.toOffset !== undefined && total > 0 && <> ({formatCount(o.fromOffset)} to {formatCount(o.toOffset)})</>}:{' '}
        {formatCount(o.written ?? 0)} written, {formatCount(o.failed ?? 0)} failed mapping, {formatCount(o.skipped ?? 0)} skipped.
      </p>
      {task.status === 'success' && task.result && <p class="ok">{task.result}</p>}
      {task.status === 'error' && <ErrorText error={task.error ?? 'The replay failed.'} />}
      {pollError !== undefined && <p class="muted">The task could not be read just now ({pollError instanceof Error ? pollError.message : String(pollError)}); trying again.</p>}
    </div>
  );
}
