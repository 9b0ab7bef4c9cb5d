/**
 * One sink (or a new one, sinkId "new"): tabs mapping (the editor), preview (live preview through
 * the test endpoint), statistics (sink-statistics.tsx), failures (sink-failures.tsx), settings.
 * To be built.
 */
import type { Route } from '../router';
import { SinkStatistics } from './sink-statistics';
import { SinkFailures } from './sink-failures';

export function SinkPage({ sourceId, sinkId, tab }: { sourceId: string; sinkId: string; tab?: string; route: Route }) {
  if (tab === 'statistics') return <SinkStatistics sourceId={sourceId} sinkId={sinkId} />;
  if (tab === 'failures') return <SinkFailures sourceId={sourceId} sinkId={sinkId} />;
  return <h1>Sink {sinkId} of {sourceId}</h1>;
}
