/** A sink's statistics: levels, files, charts over time, lag. To be built. */
export function SinkStatistics({ sinkId }: { sourceId: string; sinkId: string }) {
  return <h2>Statistics of {sinkId}</h2>;
}
