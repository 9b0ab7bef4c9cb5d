/**
 * One sink (or a new one, sinkId "new"): a header (name, id, table, state, enable/disable,
 * delete) and tabs: mapping (the editor, sink-editor.tsx), preview (live preview through the
 * test endpoint, sink-preview.tsx), statistics (sink-statistics.tsx), failures
 * (sink-failures.tsx), settings (sink-settings.tsx).
 *
 * Routes: #/sources/<sourceId>/sinks/new, #/sources/<sourceId>/sinks/<sinkId>[/<tab>].
 */
import './sink.css';
import type { Route } from '../router';
import { href, go } from '../router';
import { api, runTask, BRANCH } from '../api';
import { useLoad } from '../widgets/load';
import { ActionButton, CopyButton, ErrorText, Loading, Time, WriteOnly } from '../widgets/common';
import { SinkStatistics } from './sink-statistics';
import { SinkFailures } from './sink-failures';
import { SinkEditor } from './sink-editor';
import type { SinkView, SourceView } from '../../contract/stream-sources';
import { SinkPreview } from './sink-preview';
import { SinkSettings } from './sink-settings';

const TABS: { id: string; label: string }[] = [
  { id: 'mapping', label: 'Mapping' },
  { id: 'preview', label: 'Preview' },
  { id: 'statistics', label: 'Statistics' },
  { id: 'failures', label: 'Failures' },
  { id: 'settings', label: 'Settings' },
];

export function SinkPage({ sourceId, sinkId, tab }: { sourceId: string; sinkId: string; tab?: string; route: Route }) {
  const source = useLoad(() => api<SourceView>('GET', `${BRANCH}/sources/${encodeURIComponent(sourceId)}`), [sourceId]);
  const creating = sinkId === 'new';
  const sink = useLoad(
    () => (creating ? Promise.resolve(undefined) : api<SinkView>('GET', `${BRANCH}/sources/${encodeURIComponent(sourceId)}/sinks/${encodeURIComponent(sinkId)}`)),
    [sourceId, sinkId],
  );

  const crumbs = (
    <nav class="crumbs" aria-label="Breadcrumb">
      <a href={href('sources')}>Sources</a> / <a href={href('sources', sourceId)}>{source.data?.name ?? sourceId}</a> / sinks
    </nav>
  );
  if (source.error) return <>{crumbs}<h1>Sink</h1><ErrorText error={source.error} /></>;
  if (creating) {
    return (
      <>
        {crumbs}
        <h1>New sink of {source.data?.name ?? sourceId}</h1>
        {source.data ? <SinkEditor source={source.data} /> : <Loading />}
      </>
    );
  }
  if (sink.error) return <>{crumbs}<h1>Sink {sinkId}</h1><ErrorText error={sink.error} /></>;
  if (!source.data || !sink.data) return <>{crumbs}<Loading /></>;
  const current = TABS.some((t) => t.id === tab) ? tab! : 'mapping';
  return (
    <>
      {crumbs}
      <SinkHeader sink={sink.data} reload={sink.reload} />
      <nav class="tabs" aria-label="Sink">
        {TABS.map((t) => (
          <a key={t.id} href={t.id === 'mapping' ? href('sources', sourceId, 'sinks', sinkId) : href('sources', sourceId, 'sinks', sinkId, t.id)}
            aria-current={current === t.id ? 'page' : undefined}>{t.label}</a>
        ))}
      </nav>
      <SinkTab tab={current} sourceId={sourceId} sinkId={sinkId} source={source.data} sink={sink.data} reload={sink.reload} />
    </>
  );
}

function SinkTab({ tab, sourceId, sinkId, source, sink, reload }: { tab: string; sourceId: string; sinkId: string; source: SourceView; sink: SinkView; reload: () => Promise<void> }) {
  if (tab === 'statistics') return <SinkStatistics sourceId={sourceId} sinkId={sinkId} />;
  if (tab === 'failures') return <SinkFailures sourceId={sourceId} sinkId={sinkId} />;
  if (tab === 'preview') return <SinkPreview source={source} sink={sink} />;
  if (tab === 'settings') return <SinkSettings sourceId={sourceId} sinkId={sinkId} />;
  // Keyed by sink: another sink starts a form of its own; after a save the form already shows what is stored.
  return <SinkEditor key={sink.sinkId} source={source} sink={sink} onSaved={reload} />;
}

function SinkHeader({ sink, reload }: { sink: SinkView; reload: () => Promise<void> }) {
  const path = `${BRANCH}/sources/${encodeURIComponent(sink.sourceId)}/sinks/${encodeURIComponent(sink.sinkId)}`;
  const disabled = Boolean(sink.disabled);
  return (
    <header class="sink-header">
      <h1>{sink.name}</h1>
      <dl class="facts">
        <div><dt>Id</dt><dd><code>{sink.sinkId}</code></dd></div>
        <div>
          <dt>Table</dt>
          <dd><a href={href('tables', sink.table.tableId)}><code>{sink.table.tableId}</code></a><CopyButton text={sink.table.tableId} label="table id" /></dd>
        </div>
        <div>
          <dt>State</dt>
          <dd>
            {disabled ? <span class="badge off" title={`Disabled: ${sink.disabled?.reason ?? ''}`}>disabled</span> : <span class="badge on">enabled</span>}
          </dd>
        </div>
        <div><dt>Version</dt><dd>{sink.version.number} · <Time iso={sink.version.at} /></dd></div>
        {sink.allowedSignals && sink.allowedSignals.length > 0 && <div><dt>Signals</dt><dd>{sink.allowedSignals.join(', ')}</dd></div>}
      </dl>
      {sink.description && <p class="description">{sink.description}</p>}
      <WriteOnly>
        <div class="actions">
          {disabled
            ? <ActionButton onAction={async () => { await runTask('PUT', `${path}/enable`); await reload(); }}>Enable</ActionButton>
            : <ActionButton onAction={async () => { await runTask('PUT', `${path}/disable`); await reload(); }}>Disable</ActionButton>}
          <ActionButton class="danger" confirm={`Delete the sink "${sink.name}"? It stops taking records; its table stays. A deleted sink can be restored.`}
            onAction={async () => { await runTask('DELETE', path); go('sources', sink.sourceId); }}>Delete sink</ActionButton>
        </div>
      </WriteOnly>
    </header>
  );
}
