/** "Run a job": a configuration of a runnable component, started with POST /jobs (master token only). */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { go } from '../router';
import { useLoad } from '../widgets/load';
import { ErrorText, Field, Loading } from '../widgets/common';
import type { JobJson } from '../../contract/queue-jobs';
import type { ComponentJson } from '../../contract/storage-configurations';

export function RunJobForm() {
  const { data, error } = useLoad(() => api<ComponentJson[]>('GET', '/v2/storage/components'), []);
  const [choice, setChoice] = useState('');
  const [mode, setMode] = useState('run');
  const [runError, setRunError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  // Variables and shared code hold configurations but do not run.
  const runnable = (data ?? []).filter((c) => c.type !== 'other' && c.configurations.length > 0);
  const submit = async (event: Event) => {
    event.preventDefault();
    const [component, config] = JSON.parse(choice) as [string, string];
    setBusy(true);
    setRunError(undefined);
    try {
      const job = await api<JobJson>('POST', '/jobs', { json: { component, config, mode } });
      go('jobs', job.id);
    } catch (err) {
      setRunError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <details class="panel">
      <summary>Run a job</summary>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && runnable.length === 0 && <p class="muted">No configuration of a runnable component yet: create one with the Storage API.</p>}
      {runnable.length > 0 && (
        <form class="stack" onSubmit={submit}>
          <Field label="Configuration" error={runError}>
            <select required aria-label="Configuration to run" value={choice} onChange={(e) => setChoice((e.target as HTMLSelectElement).value)}>
              <option value="" disabled>Choose a configuration</option>
              {runnable.map((c) => (
                <optgroup key={c.id} label={`${c.name} (${c.id})`}>
                  {c.configurations.map((cfg) => (
                    <option key={cfg.id} value={JSON.stringify([c.id, cfg.id])}>
                      {cfg.name} ({cfg.id}){cfg.isDisabled ? ' — disabled' : ''}
                    </option>
                  ))}
                </optgroup>
              ))}
            </select>
          </Field>
          <Field label="Mode" hint="forceRun runs a disabled configuration too.">
            <select value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value)}>
              <option value="run">run</option>
              <option value="forceRun">forceRun</option>
              <option value="debug">debug</option>
            </select>
          </Field>
          <div class="actions"><button type="submit" class="primary" disabled={busy || choice === ''}>Run job</button></div>
        </form>
      )}
    </details>
  );
}
