/**
 * One configuration (#/configurations/<componentId>/<configId>): its JSON, rows (for
 * keboola.variables: the variables and their value rows), versions (view one against the
 * current, roll back), its recent jobs, and Run (POST /jobs). Writes need the master token.
 */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { href } from '../router';
import { useLoad } from '../widgets/load';
import { ActionButton, CopyButton, ErrorText, Loading, Time, WriteOnly } from '../widgets/common';
import { JobStatus, RunButton, formatDuration, jobResult } from './job-common';
import { lineDiff } from './configuration-diff';
import type { JobJson } from '../../contract/queue-jobs';
import type { ConfigurationJson, ConfigurationRowJson, ConfigurationVersionJson } from '../../contract/storage-configurations';

/** Components that hold configurations but do not run. */
const NOT_RUNNABLE = new Set(['keboola.variables', 'keboola.shared-code']);
const VARIABLES = 'keboola.variables';

const pretty = (v: unknown) => JSON.stringify(v, null, 2);

export function ConfigurationPage({ componentId, configId }: { componentId: string; configId: string }) {
  const base = `/v2/storage/components/${encodeURIComponent(componentId)}/configs/${encodeURIComponent(configId)}`;
  const config = useLoad(() => api<ConfigurationJson>('GET', base), [base], 10_000);
  const versions = useLoad(() => api<ConfigurationVersionJson[]>('GET', `${base}/versions?limit=100`), [base, config.data?.version]);
  const reloadAll = async () => {
    await config.reload();
    await versions.reload();
  };
  const c = config.data;
  return (
    <>
      <p><a href={href('configurations')}>← Configurations</a></p>
      <h1>
        {c ? c.name : configId} <span class="muted">({componentId})</span>
      </h1>
      <ErrorText error={config.error} />
      {!c && !config.error && <Loading />}
      {c && (
        <>
          <dl class="props">
            <dt>Id</dt><dd><code>{c.id}</code><CopyButton text={c.id} label="configuration id" /></dd>
            <dt>Component</dt><dd><code>{componentId}</code></dd>
            {c.description && <><dt>Description</dt><dd>{c.description}</dd></>}
            <dt>Version</dt><dd>{c.version} <span class="muted">— {c.currentVersion.changeDescription}, <Time iso={c.currentVersion.created} /></span></dd>
            <dt>Created</dt><dd><Time iso={c.created} /> <span class="muted">by {c.creatorToken.description || `token ${c.creatorToken.id}`}</span></dd>
            <dt>State</dt><dd>{c.isDeleted ? <span class="badge bad">deleted</span> : c.isDisabled ? <span class="badge off">disabled</span> : <span class="badge on">enabled</span>}</dd>
          </dl>
          {!NOT_RUNNABLE.has(componentId) && (
            <WriteOnly>
              <div class="actions"><RunButton componentId={componentId} configId={configId} /></div>
            </WriteOnly>
          )}
          {componentId === VARIABLES ? <Variables config={c} /> : <Rows rows={c.rows ?? []} />}
          <section aria-labelledby="config-json">
            <h2 id="config-json">Configuration</h2>
            <pre>{pretty(c.configuration)}</pre>
            {Object.keys(c.state ?? {}).length > 0 && (
              <details>
                <summary>State</summary>
                <pre>{pretty(c.state)}</pre>
              </details>
            )}
          </section>
          <Versions base={base} current={c} versions={versions.data} error={versions.error} onRolledBack={reloadAll} />
          {!NOT_RUNNABLE.has(componentId) && <RecentJobs componentId={componentId} configId={configId} />}
        </>
      )}
    </>
  );
}

function Rows({ rows }: { rows: ConfigurationRowJson[] }) {
  if (rows.length === 0) return null;
  return (
    <section aria-labelledby="config-rows">
      <h2 id="config-rows">Rows</h2>
      <p class="muted">A job runs once per enabled row, each row's configuration merged over the configuration's.</p>
      <div class="scroll">
        <table class="list">
          <thead><tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Version</th><th scope="col">Configuration</th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td><code>{r.id}</code></td>
                <td>{r.name}{r.description && <div class="muted">{r.description}</div>}</td>
                <td>{r.isDisabled ? <span class="badge off">disabled</span> : <span class="badge on">enabled</span>}</td>
                <td>{r.version}</td>
                <td><details><summary>JSON</summary><pre>{pretty(r.configuration)}</pre></details></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** keboola.variables: the declared variables, and each row's values. */
function Variables({ config }: { config: ConfigurationJson }) {
  const declared = Array.isArray(config.configuration.variables) ? (config.configuration.variables as { name?: unknown; type?: unknown }[]) : [];
  const rows = config.rows ?? [];
  return (
    <section aria-labelledby="variables">
      <h2 id="variables">Variables</h2>
      {declared.length === 0 ? <p class="muted">No variables declared.</p> : (
        <div class="scroll">
          <table class="list">
            <thead><tr><th scope="col">Variable</th><th scope="col">Type</th></tr></thead>
            <tbody>
              {declared.map((v, i) => <tr key={i}><td><code>{String(v.name ?? '')}</code></td><td>{String(v.type ?? '')}</td></tr>)}
            </tbody>
          </table>
        </div>
      )}
      <h3>Values</h3>
      {rows.length === 0 && <p class="muted">No value rows: a job must bring its values (variableValuesData).</p>}
      {rows.map((r) => {
        const values = Array.isArray(r.configuration.values) ? (r.configuration.values as { name?: unknown; value?: unknown }[]) : [];
        return (
          <div key={r.id} class="panel">
            <h4>Row <code>{r.id}</code>{r.name && r.name !== r.id && ` — ${r.name}`}</h4>
            <div class="scroll">
              <table class="list">
                <thead><tr><th scope="col">Variable</th><th scope="col">Value</th></tr></thead>
                <tbody>
                  {values.map((v, i) => <tr key={i}><td><code>{String(v.name ?? '')}</code></td><td><code class="pre">{String(v.value ?? '')}</code></td></tr>)}
                </tbody>
              </table>
            </div>
          </div>
        );
      })}
    </section>
  );
}

function Versions(props: { base: string; current: ConfigurationJson; versions: ConfigurationVersionJson[] | undefined; error: unknown; onRolledBack: () => Promise<void> }) {
  const { base, current, versions } = props;
  const [shown, setShown] = useState<ConfigurationVersionJson | undefined>(undefined);
  const [showError, setShowError] = useState<unknown>(undefined);
  const view = async (n: number) => {
    setShowError(undefined);
    try {
      setShown(await api<ConfigurationVersionJson>('GET', `${base}/versions/${n}`));
    } catch (err) {
      setShowError(err);
    }
  };
  return (
    <section aria-labelledby="versions">
      <h2 id="versions">Versions</h2>
      <ErrorText error={props.error} />
      {!versions && !props.error && <Loading />}
      {versions && (
        <div class="scroll">
          <table class="list">
            <thead><tr><th scope="col">Version</th><th scope="col">Change</th><th scope="col">Created</th><th scope="col">By</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.version} class={v.version === current.version ? 'version-current' : undefined}>
                  <td>{v.version}{v.version === current.version && <> <span class="badge on">current</span></>}</td>
                  <td>{v.changeDescription}</td>
                  <td><Time iso={v.created} /></td>
                  <td>{v.creatorToken.description || `token ${v.creatorToken.id}`}</td>
                  <td>
                    <div class="inline">
                    <button type="button" class="small" onClick={() => void view(v.version)} aria-label={`View version ${v.version}`}>View</button>
                    {v.version !== current.version && (
                      <WriteOnly>
                        <ActionButton
                          class="small"
                          label={`Roll back to version ${v.version}`}
                          confirm={`Roll back "${current.name}" to version ${v.version}? This adds a new version with its content.`}
                          onAction={async () => {
                            await api('POST', `${base}/versions/${v.version}/rollback`, { json: {} });
                            setShown(undefined);
                            await props.onRolledBack();
                          }}
                        >
                          Roll back
                        </ActionButton>
                      </WriteOnly>
                    )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorText error={showError} />
      {shown && <VersionView version={shown} current={current} onClose={() => setShown(undefined)} />}
    </section>
  );
}

function VersionView({ version, current, onClose }: { version: ConfigurationVersionJson; current: ConfigurationJson; onClose: () => void }) {
  const snapshot = (configuration: unknown, rows: ConfigurationRowJson[] | undefined) =>
    pretty({ configuration, rows: (rows ?? []).map((r) => ({ id: r.id, name: r.name, isDisabled: r.isDisabled, configuration: r.configuration })) });
  const before = snapshot(version.configuration, version.rows);
  const after = snapshot(current.configuration, current.rows);
  const diff = version.version === current.version ? undefined : lineDiff(before, after);
  return (
    <div class="panel" aria-labelledby="version-view">
      <div class="actions">
        <h3 id="version-view" style={{ margin: 0 }}>Version {version.version} <span class="muted">— {version.changeDescription}, <Time iso={version.created} /></span></h3>
        <button type="button" class="small" onClick={onClose}>Close</button>
      </div>
      {diff ? (
        <>
          <p class="muted">Changes from version {version.version} to the current version {current.version} (<span class="diff"><span class="del">removed</span> / <span class="add">added</span></span>):</p>
          <div class="diff" role="region" aria-label={`Version ${version.version} compared with the current version`}>
            {diff.map((l, i) => (
              <div key={i} class={l.kind === 'same' ? undefined : l.kind}>{l.kind === 'add' ? '+ ' : l.kind === 'del' ? '- ' : '  '}{l.text}</div>
            ))}
          </div>
        </>
      ) : (
        <pre>{before}</pre>
      )}
    </div>
  );
}

function RecentJobs({ componentId, configId }: { componentId: string; configId: string }) {
  const query = new URLSearchParams({ component: componentId, config: configId, limit: '10', sortBy: 'id', sortOrder: 'desc' });
  const { data, error } = useLoad(() => api<JobJson[]>('GET', `/search/jobs?${query}`), [query.toString()], 5000);
  const all = href('jobs') + '?' + new URLSearchParams({ component: componentId, config: configId });
  return (
    <section aria-labelledby="recent-jobs">
      <h2 id="recent-jobs">Recent jobs</h2>
      <ErrorText error={error} />
      {data && data.length === 0 && <p class="muted">Not run yet.</p>}
      {data && data.length > 0 && (
        <div class="scroll">
          <table class="list">
            <thead><tr><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Duration</th><th scope="col">Result</th></tr></thead>
            <tbody>
              {data.map((j) => (
                <tr key={j.id}>
                  <td><a href={href('jobs', j.id)}>{j.id}</a></td>
                  <td><JobStatus status={j.status} /></td>
                  <td><Time iso={j.createdTime} /></td>
                  <td>{j.startTime ? formatDuration(j.durationSeconds) : '—'}</td>
                  <td>{jobResult(j).message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p><a href={all}>All jobs of this configuration</a></p>
    </section>
  );
}
