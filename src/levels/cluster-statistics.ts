/**
 * Cluster mode: sink statistics across the nodes. A sink's files and slices are node-local
 * (each node's levels hold what it wrote for the partitions it owned), so every node with the
 * sink role publishes its part of each sink's statistics into the shared metadata, at most every
 * `intervalMs` and only when it changed (the reference syncs its statistics to etcd every
 * second). Statistics read on any node, including one without the sink role, add the other
 * nodes' parts to its own (StatisticsService `peers`).
 *
 * Keys: `cluster/stats/<branch>/<source>/<sink>/<member>`. The member is the node's data
 * directory (an id kept in its local metadata), so a node that restarts replaces its own part
 * instead of adding a second one. The part names the node process that published it: while
 * that process is alive (its hand-over heartbeat), every file counts; once it is dead, only its
 * imported files do. Its other files are never imported by it (the fence), and the node that
 * took its partitions over counts those records again as it reads them.
 */
import { randomUUID } from 'node:crypto';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import type { SinkKey } from '../model/levels.js';
import type { NodeSinkStatistics, StatisticsService } from './statistics.js';

const PREFIX = 'cluster/stats/';
/** Node-local (not a shared key space): the member id of this data directory. */
const MEMBER_KEY = 'node/statistics-member';
/** Every node's part of the statistics (shared, in the background) and this data directory's member id (node-local). */
export const CLUSTER_STATISTICS_KEY_SPACES: readonly KeySpace[] = [
  { prefix: PREFIX, shared: true, background: true },
  { prefix: MEMBER_KEY, shared: false },
];

const SWEEP_MS = 30_000;

const sinkPrefix = (sink: SinkKey) => `${PREFIX}${sink.branchId}/${sink.sourceId}/${sink.sinkId}/`;

export class ClusterStatistics {
  readonly member: string;
  /** Last part published per key (as JSON), to publish changes only. */
  private readonly published = new Map<string, string>();
  private lastPublish = -Infinity;
  /** Parts of sinks that are gone are looked for less often (it reads every node's parts). */
  private lastSweep = -Infinity;

  constructor(
    private readonly store: MetadataStore,
    /** This node process (what the parts name). */
    private readonly node: string,
    /** Whether a node process is alive (hand-over heartbeats). */
    private readonly isAlive: (node: string) => boolean,
    private readonly intervalMs = 2000,
  ) {
    this.member = store.get<string>(MEMBER_KEY) ?? store.transact((tx) => {
      const id = randomUUID();
      tx.put(MEMBER_KEY, id);
      return id;
    });
  }

  /** The other members' parts of the sink's statistics, as they count now. */
  peers(sink: SinkKey): NodeSinkStatistics[] {
    const prefix = sinkPrefix(sink);
    const own = prefix + this.member;
    const parts: NodeSinkStatistics[] = [];
    for (const { key, value } of this.store.list<NodeSinkStatistics>(prefix)) {
      if (key === own) continue;
      parts.push(this.isAlive(value.node) ? value : { ...value, files: value.files.filter((f) => f.state === 'imported') });
    }
    return parts;
  }

  /**
   * Publishes this node's part of each sink's statistics (`sinks`: read only when due) where it changed (at most every
   * `intervalMs`, unless `force`), and removes its parts of sinks that are gone (at most every
   * 30 s, unless `force`).
   */
  publish(statistics: StatisticsService, sinks: () => readonly SinkKey[], now = Date.now(), force = false): void {
    if (!force && now - this.lastPublish < this.intervalMs) return;
    this.lastPublish = now;
    const mine = new Set<string>();
    for (const sink of sinks()) {
      const key = sinkPrefix(sink) + this.member;
      const part = statistics.nodeSinkStatistics(sink, this.node);
      const empty = part.files.length === 0 && part.archived === undefined && part.filtered === undefined;
      if (empty && this.store.get(key) === undefined) continue;
      mine.add(key);
      const json = JSON.stringify(part);
      if (this.published.get(key) === json) continue;
      this.store.transact((tx) => tx.put(key, part));
      this.published.set(key, json);
    }
    if (!force && now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    const suffix = '/' + this.member;
    const gone = this.store.list(PREFIX).map((e) => e.key).filter((key) => key.endsWith(suffix) && !mine.has(key));
    if (gone.length === 0) return;
    this.store.transact((tx) => {
      for (const key of gone) tx.delete(key);
    });
    for (const key of gone) this.published.delete(key);
  }
}
