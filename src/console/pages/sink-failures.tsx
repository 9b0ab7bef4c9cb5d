/** A sink's mapping failures: list, reprocess, replay. To be built. */
export function SinkFailures({ sinkId }: { sourceId: string; sinkId: string }) {
  return <h2>Mapping failures of {sinkId}</h2>;
}
