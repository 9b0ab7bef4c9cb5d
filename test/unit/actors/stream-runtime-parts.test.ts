/**
 * The parts stream-runtime.ts composes: the level repository's sink positions (the `offset` and
 * `seen` keys, byte-identical to what the runtime wrote itself before), and the cluster
 * membership (streams gained after their release, lost, forgotten with their topic).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalDirectoryStaging } from '../../../src/adapters/staging/local-directory-staging.js';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import type { EventLog, OwnershipChange } from '../../../src/ports/event-log.js';
import { FilesRepository } from '../../../src/levels/files-repository.js';
import { SinkPositions } from '../../../src/levels/positions.js';
import { levelKeys, type SinkKey } from '../../../src/model/levels.js';
import { adoptedAt, restartAt, SEEN_EVERYTHING } from '../../../src/pipeline/seen-offsets.js';
import { ClusterMembership } from '../../../src/actors/cluster-membership.js';
import type { Logger } from '../../../src/logger.js';

const dirs: string[] = [];
const stores: LmdbMetadataStore[] = [];
function lmdb(): LmdbMetadataStore {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-runtime-parts-'));
  dirs.push(dir);
  const store = new LmdbMetadataStore(dir);
  stores.push(store);
  return store;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const sink: SinkKey = { branchId: 1, sourceId: 'src', sinkId: 'snk#2' };

describe('the sink positions', () => {
  it('keeps the offset and seen keys the runtime wrote itself', () => {
    const store = lmdb();
    const levels = new SinkPositions(store);
    expect(store.get(levelKeys.offset(sink))).toBeUndefined();
    levels.startAnewAt(sink, 7);
    expect(store.get(levelKeys.offset(sink))).toBe(7);
    expect(store.get(levelKeys.seen(sink))).toEqual(restartAt(undefined, undefined, 7));
    // A sink older than replay (an offset, no seen offsets) counts everything it consumed as seen.
    store.transact((tx) => tx.delete(levelKeys.seen(sink)));
    levels.startAnewAt(sink, 12);
    expect(store.get(levelKeys.seen(sink))).toEqual(restartAt(SEEN_EVERYTHING, 7, 12));
    const before = store.get(levelKeys.seen(sink));
    levels.adoptAt(sink, 20, 12);
    expect(store.get(levelKeys.offset(sink))).toBe(20);
    expect(store.get(levelKeys.seen(sink))).toEqual(adoptedAt(before as never, 12, 20));
  });

  it('lists the sink instances of a branch that have a position', () => {
    const store = lmdb();
    const levels = new SinkPositions(store);
    levels.startAnewAt(sink, 1);
    levels.startAnewAt({ branchId: 1, sourceId: 'a', sinkId: 'b' }, 1);
    levels.startAnewAt({ branchId: 2, sourceId: 'a', sinkId: 'b' }, 1);
    expect(levels.positionedSinks(1)).toEqual([{ branchId: 1, sourceId: 'a', sinkId: 'b' }, sink]);
  });
});

describe('cluster membership', () => {
  function fakeLog() {
    let listener: ((stream: string, change: OwnershipChange) => void) | undefined;
    const acknowledged: Array<[string, number]> = [];
    const log = {
      onOwnership: (l: (stream: string, change: OwnershipChange) => void) => {
        listener = l;
        return () => (listener = undefined);
      },
      acknowledge: (stream: string, offset: number) => void acknowledged.push([stream, offset]),
    } as unknown as EventLog;
    return { log, acknowledged, change: (stream: string, change: OwnershipChange) => listener?.(stream, change) };
  }
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;

  it('takes a partition up once its previous owner released it, and lets it go', async () => {
    const { log, change, acknowledged } = fakeLog();
    let release!: () => void;
    const released: string[] = [];
    const handOver = {
      nodeId: 'n1',
      awaitRelease: () => new Promise<void>((r) => (release = r)),
      released: (s: string) => void released.push(s),
      working: () => undefined,
      heartbeat: () => undefined,
    };
    const store = lmdb();
    const membership = new ClusterMembership({ eventLog: log, files: new FilesRepository(store), positions: new SinkPositions(store), tables: { claimSink: async () => undefined }, logger, dataDir: '/nonexistent', staging: new LocalDirectoryStaging('/nonexistent'), handOver: handOver as never });
    const events: string[] = [];
    membership.start({ gained: (s) => events.push(`gained ${s}`), lost: (s) => events.push(`lost ${s}`) });
    change('t#1', { owned: true, committedThrough: 5 });
    await Promise.resolve();
    expect(membership.size).toBe(0);
    release();
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['gained t#1']);
    expect(membership.partitionIdsOf('t')).toEqual(['t#1']);
    membership.acknowledgeImported([{ key: sink, partitionId: 't#1' }, { key: sink, partitionId: 'other#0' }]);
    expect(acknowledged).toEqual([['t#1', 0]]);
    change('t#1', { owned: false });
    change('t#1', { owned: false });
    expect(events).toEqual(['gained t#1', 'lost t#1']);
    let during = false;
    await membership.release('t#1', async () => void (during = membership.isReleasing('t#1')));
    expect(during).toBe(true);
    expect(membership.isReleasing('t#1')).toBe(false);
    membership.released('t#1');
    expect(released).toEqual(['t#1']);
    membership.stop();
  });

  it('drops the files it still has of a sink before it claims the sink again: after the claim the fence would let a stale import through', async () => {
    const { log } = fakeLog();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-adopt-'));
    dirs.push(dir);
    const store = lmdb();
    const levels = new FilesRepository(store);
    // From an earlier turn on this node: a file closed, not imported, its slice's CSV on disk.
    levels.openFile({ projectId: 1, ...sink, tableId: 'in.c-b.t', columns: [{ type: 'body', name: 'body' }], settings: [] });
    const { closedSlice } = levels.closeFile(sink)!;
    const localFile = join(dir, closedSlice.localPath);
    mkdirSync(dirname(localFile), { recursive: true });
    writeFileSync(localFile, '"{}"\n');
    let atClaim: { files: number; localFile: boolean } | undefined;
    const tables = {
      claimSink: async () => {
        atClaim = { files: levels.listFiles(sink).length, localFile: existsSync(localFile) };
        return 40;
      },
    };
    const handOver = { nodeId: 'n1', working: () => undefined };
    const membership = new ClusterMembership({ eventLog: log, files: levels, positions: new SinkPositions(store), tables, logger, dataDir: dir, staging: new LocalDirectoryStaging(dir), handOver: handOver as never });
    expect(await membership.adopt(sink, 't#2', () => false, () => 0)).toBe(40);
    expect(atClaim).toEqual({ files: 0, localFile: false });
  });
});
