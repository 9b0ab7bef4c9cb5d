/**
 * Reading a source's newest records (src/api/stream/source-log.ts), as the records route and the
 * mapping proposal do: a partition backwards in chunks, down to the oldest record retention
 * kept, without reading what the caller does not take; the partitions of a topic merged newest
 * first (Kafka's topics have several).
 */
import { describe, expect, it } from 'vitest';
import { newestFirst, newestOfTopic, take, type SourceLog } from '../../../src/api/stream/source-log.js';
import { partitionIdOf, type LoggedRecord } from '../../../src/ports/event-log.js';

/** A log of partitions given as receive times (ms) by offset from 1, the first `removed` taken by retention. */
function log(partitions: Record<string, { times: number[]; removed?: number }>) {
  const fetches: Array<[string, number, number]> = [];
  const recordsOf = (id: string): LoggedRecord[] => {
    const p = partitions[id] ?? { times: [] };
    return p.times.map((t, i) => ({ offset: i + 1, record: { receivedAt: new Date(t), ip: '', headers: {}, body: Buffer.from(`${id}:${i + 1}`), signal: '' as const } }))
      .slice(p.removed ?? 0);
  };
  const source: SourceLog = {
    headOffset: (id) => partitions[id]?.times.length ?? 0,
    tailOffset: (id) => (partitions[id]?.removed ?? 0) + 1,
    fetch: async (id, after, limit) => {
      fetches.push([id, after, limit]);
      return recordsOf(id).filter((r) => r.offset > after).slice(0, limit);
    },
  };
  return { source, fetches };
}

const offsets = (records: LoggedRecord[]) => records.map((r) => r.offset);

describe('newestFirst', () => {
  it('reads a partition backwards, a chunk at a time, down to its oldest kept record', async () => {
    const { source, fetches } = log({ t: { times: [1, 2, 3, 4, 5, 6, 7], removed: 2 } });
    expect(offsets(await take(newestFirst(source, 't', 2), 100))).toEqual([7, 6, 5, 4, 3]);
    expect(fetches).toEqual([['t', 5, 2], ['t', 3, 2], ['t', 2, 1]]);
  });

  it('reads no further than the caller takes', async () => {
    const { source, fetches } = log({ t: { times: Array.from({ length: 1000 }, (_, i) => i) } });
    expect(offsets(await take(newestFirst(source, 't', 25), 30))).toEqual(Array.from({ length: 30 }, (_, i) => 1000 - i));
    expect(fetches).toHaveLength(2);
  });

  it('reads nothing from an empty or emptied partition', async () => {
    const { source, fetches } = log({ gone: { times: [1, 2], removed: 2 } });
    expect(await take(newestFirst(source, 'empty', 5), 5)).toEqual([]);
    expect(await take(newestFirst(source, 'gone', 5), 5)).toEqual([]);
    expect(fetches).toEqual([]);
  });
});

describe('newestOfTopic', () => {
  it('merges the partitions newest first by receive time (a tie: the lower partition first)', async () => {
    const { source } = log({
      [partitionIdOf('src', 0)]: { times: [10, 30, 50] },
      [partitionIdOf('src', 1)]: { times: [20, 40, 50, 60] },
    });
    const merged = await take(newestOfTopic(source, 'src', 2, 2), 100);
    expect(merged.map((r) => `${r.partition}:${r.logged.offset}`)).toEqual(['1:4', '0:3', '1:3', '1:2', '0:2', '1:1', '0:1']);
  });
});
