/**
 * One source (#/sources/<sourceId>[/<tab>]): tabs Overview (details, ingestion URL and examples,
 * its sinks, write actions), Versions (source-versions.tsx) and Settings (source-settings.tsx).
 * The source and its sinks are polled every 5 s, so the page follows changes made elsewhere.
 */
import './source.css';
import { useState } from 'preact/hooks';
import type { Route } from '../router';
import { go, href } from '../router';
import { api, runTask } from '../api';
import { useLoad } from '../widgets/load';
import { ActionButton, CopyButton, ErrorText, Field, Loading, Time, WriteOnly, formatBytes, formatCount } from '../widgets/common';
import { LAST_HOUR_HINT, recordsInLastHour, seg, sourcePath, waitForTask } from './source-model';
import type { DefaultSinksAnswer, SinksAnswer, SinkView, SourceQuotaView, SourceView } from '../../contract/stream-sources';
import type { SinkFilesAnswer, SinkStatisticsTotalAnswer } from '../../contract/statistics';
import { SourceVersions } from './source-versions';
import { SourceSettings } from './source-settings';

const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'versions', label: 'Versions' },
  { id: 'settings', label: 'Settings' },
];

export function SourcePage({ sourceId, tab }: { sourceId: string; tab?: string; route: Route }) {
  const current = tab ?? 'overview';
  const { data: source, error, reload } = useLoad(() => api<SourceView>('GET', sourcePath(sourceId)), [sourceId], 5000);
  return (
    <>
      <p class="src-back"><a href={href('sources')}>← Sources</a></p>
      <div class="src-title">
        <h1>{source?.name ?? sourceId}</h1>
        {source && <StateBadge entity={source} />}
        {source && <QuotaBadges quota={source.quota} />}
      </div>
      <nav class="tabs" aria-label="Source">
        {TABS.map((t) => (
          <a key={t.id} href={href('sources', sourceId, t.id)} aria-current={current === t.id ? 'page' : undefined}>{t.label}</a>
        ))}
      </nav>
      <ErrorText error={error} />
      {!source && !error && <Loading />}
      {source && current === 'overview' && <Overview source={source} reload={reload} />}
      {source && current === 'versions' && <SourceVersions source={source} onChanged={reload} />}
      {source && current === 'settings' && <SourceSettings sourceId={source.sourceId} />}
      {!TABS.some((t) => t.id === current) && <p>This tab does not exist. <a href={href('sources', sourceId)}>Back to the overview</a>.</p>}
    </>
  );
}

export function StateBadge({ entity }: { entity: { disabled?: unknown } }) {
  return entity.disabled ? <span class="badge off">disabled</span> : <span class="badge on">enabled</span>;
}

/** "100 records/s, 1.0 MB/s": a source's quota as its badge and details say it. */
export function quotaText(quota: SourceQuotaView): string {
  const parts: string[] = [];
  if (quota.recordsPerSecond !== undefined) parts.push(`${formatCount(quota.recordsPerSecond)} records/s`);
  if (quota.bytesPerSecond !== undefined) parts.push(`${formatBytes(quota.bytesPerSecond)}/s`);
  return parts.join(', ');
}

/**
 * A source's quota (the API shows one only where it applies), and "throttled" when the node
 * that answered refused the source's requests over it within the last minute.
 */
export function QuotaBadges({ quota }: { quota: SourceQuotaView | undefined }) {
  if (!quota) return null;
  const text = quotaText(quota);
  return (
    <>
      {' '}
      <span class="badge" title={`Quota on each node: ${text}; requests over it are answered 429.`}>quota {text}</span>
      {quota.throttledAt && (
        <>
          {' '}
          <span class="badge off" title={`Requests over the quota were answered 429 within the last minute (last: ${quota.throttledAt}).`}>throttled</span>
        </>
      )}
    </>
  );
}

function who(by: { tokenDesc?: string; userName?: string } | undefined): string {
  return by?.tokenDesc ?? by?.userName ?? 'unknown';
}

function Overview({ source, reload }: { source: SourceView; reload: () => Promise<void> }) {
  return (
    <>
      <div class="grid2 src-grid">
        <section class="panel" aria-labelledby="src-details">
          <h2 id="src-details">Details</h2>
          <dl class="src-props">
            <dt>Name</dt>
            <dd>{source.name}</dd>
            <dt>Id</dt>
            <dd><code>{source.sourceId}</code><CopyButton text={source.sourceId} label="source id" /></dd>
            <dt>Description</dt>
            <dd>{source.description ? <span class="src-description">{source.description}</span> : <span class="muted">none</span>}</dd>
            <dt>Type</dt>
            <dd>{source.type.toUpperCase()}</dd>
            <dt>State</dt>
            <dd>
              <StateBadge entity={source} />
              {source.disabled && <span class="muted"> since <Time iso={source.disabled.at} />{source.disabled.reason ? ` (${source.disabled.reason})` : ''}</span>}
            </dd>
            <dt>Quota</dt>
            <dd>
              {source.quota
                ? <>{quotaText(source.quota)} <span class="muted">on each node (settings: source.quota.*)</span>{source.quota.throttledAt && <span class="muted">; throttled <Time iso={source.quota.throttledAt} /></span>}</>
                : <span class="muted">none</span>}
            </dd>
            <dt>Created</dt>
            <dd><Time iso={source.created.at} /> <span class="muted">by {who(source.created.by)}</span></dd>
            <dt>Version</dt>
            <dd>
              <a href={href('sources', source.sourceId, 'versions')}>{source.version.number}</a>: {source.version.description}{' '}
              <span class="muted"><Time iso={source.version.at} /> by {who(source.version.by)}</span>
            </dd>
          </dl>
        </section>
        <Ingestion source={source} />
      </div>
      <SinksOfSource source={source} />
      <WriteOnly>
        <SourceActions source={source} reload={reload} />
      </WriteOnly>
    </>
  );
}

/** A value to copy: its label, the value (wraps anywhere: long URLs on a phone) and a copy button. */
function CopyLine({ label, value, id }: { label: string; value: string; id: string }) {
  return (
    <div class="src-copyline">
      <span class="src-copylabel" id={`${id}-label`}>{label}</span>
      <code id={id} aria-labelledby={`${id}-label`}>{value}</code>
      <CopyButton text={value} label={label.toLowerCase()} />
    </div>
  );
}

function Example({ label, text, id }: { label: string; text: string; id: string }) {
  return (
    <div class="src-example">
      <div class="src-copyline">
        <span class="src-copylabel" id={`${id}-label`}>{label}</span>
        <CopyButton text={text} label={label.toLowerCase()} />
      </div>
      <pre id={id} aria-labelledby={`${id}-label`}>{text}</pre>
    </div>
  );
}

/** Single quotes for a shell: ' becomes '\''. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Shown instead of the secret-bearing URL to a token the API does not give the secret. */
const NO_SECRET = 'The ingestion secret is shown only to tokens that may write to the buckets of all the source\'s sinks.';

function Ingestion({ source }: { source: SourceView }) {
  if (source.otlp) {
    const { url, baseUrl } = source.otlp;
    if (url === undefined) {
      return (
        <section class="panel" aria-labelledby="src-ingestion">
          <h2 id="src-ingestion">Ingestion (OTLP/HTTP)</h2>
          <CopyLine label="OTLP base URL" value={baseUrl} id="src-otlp-base-url" />
          <p class="hint" id="src-no-secret">{NO_SECRET}</p>
          {source.kafka && <CopyLine label="Kafka topic" value={source.kafka.topic} id="src-kafka-topic" />}
        </section>
      );
    }
    const env = `export OTEL_EXPORTER_OTLP_ENDPOINT=${shellQuote(url)}\nexport OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`;
    const collector = `exporters:\n  otlphttp:\n    endpoint: ${url}`;
    const curl = `curl -X POST ${shellQuote(`${url}/v1/logs`)} -H 'Content-Type: application/json' -d '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"hello"}}]}]}]}'`;
    return (
      <section class="panel" aria-labelledby="src-ingestion">
        <h2 id="src-ingestion">Ingestion (OTLP/HTTP)</h2>
        <p class="hint">Logs, metrics and traces, protobuf or JSON, gzip allowed. Exporters append <code>/v1/logs</code>, <code>/v1/metrics</code> or <code>/v1/traces</code> to the endpoint.</p>
        <CopyLine label="OTLP URL" value={url} id="src-otlp-url" />
        <CopyLine label="OTLP base URL" value={baseUrl} id="src-otlp-base-url" />
        <p class="hint">The OTLP URL carries the secret. With the base URL, send the secret in a header instead: <code>Authorization: Bearer &lt;secret&gt;</code>.</p>
        <Example label="Exporter environment" text={env} id="src-otlp-env" />
        <Example label="Collector exporter" text={collector} id="src-otlp-collector" />
        <Example label="curl example" text={curl} id="src-curl" />
        {source.kafka && <CopyLine label="Kafka topic" value={source.kafka.topic} id="src-kafka-topic" />}
      </section>
    );
  }
  const url = source.http?.url;
  if (url === undefined) {
    return (
      <section class="panel" aria-labelledby="src-ingestion">
        <h2 id="src-ingestion">Ingestion (HTTP)</h2>
        <p class="hint" id="src-no-secret">{NO_SECRET}</p>
        {source.kafka && <CopyLine label="Kafka topic" value={source.kafka.topic} id="src-kafka-topic" />}
      </section>
    );
  }
  const curl = `curl -X POST ${shellQuote(url)} -H 'Content-Type: application/json' -d '{"hello":"world"}'`;
  return (
    <section class="panel" aria-labelledby="src-ingestion">
      <h2 id="src-ingestion">Ingestion (HTTP)</h2>
      <p class="hint">POST any body to this URL; no token needed: the secret is part of the URL. Keep it private, or rotate the secret.</p>
      <CopyLine label="Ingestion URL" value={url} id="src-url" />
      <Example label="curl example" text={curl} id="src-curl" />
      {source.kafka && <CopyLine label="Kafka topic" value={source.kafka.topic} id="src-kafka-topic" />}
    </section>
  );
}

function SourceActions({ source, reload }: { source: SourceView; reload: () => Promise<void> }) {
  const path = sourcePath(source.sourceId);
  const [editing, setEditing] = useState(false);
  const [cascade, setCascade] = useState(false);
  return (
    <section class="panel src-actions" aria-labelledby="src-actions">
      <h2 id="src-actions">Actions</h2>
      <div class="actions">
        <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>Edit name and description</button>
        {source.disabled ? (
          <ActionButton onAction={async () => { await runTask('PUT', `${path}/enable`); await reload(); }}>Enable</ActionButton>
        ) : (
          <ActionButton onAction={async () => { await runTask('PUT', `${path}/disable`); await reload(); }}>Disable</ActionButton>
        )}
        <ActionButton
          confirm={`Rotate the secret of "${source.name}"? The current ingestion URL stops working at once.`}
          onAction={async () => { await api('POST', `${path}/rotate-secret`); await reload(); }}
        >
          Rotate secret
        </ActionButton>
      </div>
      {editing && <EditSource source={source} reload={reload} onDone={() => setEditing(false)} />}
      <div class="src-delete">
        <label class="src-check">
          <input type="checkbox" checked={cascade} onChange={(e) => setCascade((e.target as HTMLInputElement).checked)} />
          Also delete its sinks, their tables and the bucket (for good: it cannot be undeleted then)
        </label>
        <ActionButton
          class="danger"
          confirm={cascade
            ? `Delete "${source.name}" with its sinks, their tables and the bucket, for good?`
            : `Delete "${source.name}"? It can be restored from the deleted sources.`}
          onAction={async () => {
            await runTask('DELETE', cascade ? `${path}?cascade=true` : path);
            go('sources');
          }}
        >
          Delete source
        </ActionButton>
      </div>
    </section>
  );
}

function EditSource({ source, reload, onDone }: { source: SourceView; reload: () => Promise<void>; onDone: () => void }) {
  const [name, setName] = useState(source.name);
  const [description, setDescription] = useState(source.description ?? '');
  const [change, setChange] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await runTask('PATCH', sourcePath(source.sourceId), { json: { name, description, ...(change ? { changeDescription: change } : {}) } });
      await reload();
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack" onSubmit={submit} aria-label="Edit the source">
      <Field label="Name">
        <input name="name" required maxLength={40} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </Field>
      <Field label="Description">
        <textarea name="description" maxLength={4096} value={description} onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)} />
      </Field>
      <Field label="Change description" hint="Optional: kept with the new version (default “Updated.”).">
        <input name="changeDescription" maxLength={4096} value={change} onInput={(e) => setChange((e.target as HTMLInputElement).value)} />
      </Field>
      <ErrorText error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>Save</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

interface SinkRow extends SinkView {
  records?: number;
  lastHour?: number;
}

/** The source's sinks with their record counts (statistics/total) and the last hour's (statistics/files). */
async function loadSinks(sourceId: string): Promise<SinkRow[]> {
  const { sinks } = await api<SinksAnswer>('GET', `${sourcePath(sourceId)}/sinks`);
  const now = Date.now();
  return Promise.all(sinks.map(async (sink) => {
    const base = `${sourcePath(sourceId)}/sinks/${seg(sink.sinkId)}/statistics`;
    try {
      const [total, files] = await Promise.all([
        api<SinkStatisticsTotalAnswer>('GET', `${base}/total`),
        api<SinkFilesAnswer>('GET', `${base}/files`),
      ]);
      return { ...sink, records: total.total?.recordsCount ?? 0, lastHour: recordsInLastHour(files.files, now) };
    } catch {
      // A sink deleted between the two calls: listed without figures until the next poll.
      return sink;
    }
  }));
}

function SinksOfSource({ source }: { source: SourceView }) {
  const { data, error, reload } = useLoad(() => loadSinks(source.sourceId), [source.sourceId], 5000);
  const otlp = source.type === 'otlp';
  const createDefaults = async () => {
    const answer = await api<DefaultSinksAnswer>(
      'POST', `${sourcePath(source.sourceId)}/otlp/default-sinks`, { json: {} });
    const failures: string[] = [];
    for (const s of answer.sinks) {
      if (!('task' in s)) continue;
      try {
        await waitForTask(s.task);
      } catch (err) {
        failures.push(`${s.sinkId}: ${(err as Error).message}`);
      }
    }
    await reload();
    if (failures.length > 0) throw new Error(failures.join('\n'));
  };
  return (
    <section aria-labelledby="src-sinks">
      <h2 id="src-sinks">Sinks</h2>
      <WriteOnly>
        <div class="actions">
          <a class="button" href={href('sources', source.sourceId, 'sinks', 'new')}>New sink</a>
          {otlp && <ActionButton onAction={createDefaults}>Create default sinks</ActionButton>}
        </div>
      </WriteOnly>
      <ErrorText error={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <div class="scroll">
            <table class="list" aria-label="Sinks">
              <thead>
                <tr>
                  <th scope="col">Name</th><th scope="col">Id</th><th scope="col">Table</th>
                  {otlp && <th scope="col">Signals</th>}
                  <th scope="col">State</th><th scope="col">Records</th><th scope="col">Last hour</th>
                </tr>
              </thead>
              <tbody>
                {data.length === 0 && (
                  <tr><td colSpan={otlp ? 7 : 6} class="muted">No sinks yet: records are kept in the event log until a sink takes them.</td></tr>
                )}
                {data.map((s) => (
                  <tr key={s.sinkId}>
                    <td><a href={href('sources', source.sourceId, 'sinks', s.sinkId)}>{s.name}</a></td>
                    <td class="src-nowrap"><code>{s.sinkId}</code><CopyButton text={s.sinkId} label={`sink id ${s.sinkId}`} /></td>
                    <td><code>{s.table.tableId}</code></td>
                    {otlp && <td>{s.allowedSignals?.join(', ') || 'all'}</td>}
                    <td><StateBadge entity={s} /></td>
                    <td>{formatCount(s.records)}</td>
                    <td>{formatCount(s.lastHour)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="hint">{LAST_HOUR_HINT}</p>
        </>
      )}
    </section>
  );
}
