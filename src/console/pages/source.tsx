/** One source: overview (ingestion URL), sinks, settings, versions. To be built. */
import type { Route } from '../router';

export function SourcePage({ sourceId }: { sourceId: string; tab?: string; route: Route }) {
  return <h1>Source {sourceId}</h1>;
}
