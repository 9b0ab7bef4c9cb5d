/**
 * What the crash and outage tests check after streaming: the sink has imported everything it
 * wrote, and the table holds every acknowledged event, nothing no client sent, and nothing more
 * often than its client sent it (twice only when the client sent it again).
 */
import { expect } from 'vitest';
import { sleep, type ChildService } from './child-service.js';

export interface ImportState {
  /** Records in the target level. */
  imported: number;
  /** Everything the sink wrote was imported (nothing left in the local or staging level), at least `atLeast`, and it held still. */
  settled: boolean;
  /** The last statistics seen, for failure messages. */
  stats: string;
}

/**
 * Waits until the sink has moved every record it wrote to the target (nothing left in the local
 * or staging level), with at least `atLeast` records imported, and the count held still for a
 * moment (a record consumed late shows up in the total first). Does not throw on timeout: the
 * caller compares the table with what was acknowledged, which says more than a timeout.
 */
export async function waitAllImported(svc: ChildService, sourceId: string, sinkId: string, atLeast: number, timeoutMs: number): Promise<ImportState> {
  const deadline = Date.now() + timeoutMs;
  let previous = -1;
  let state: ImportState = { imported: 0, settled: false, stats: 'none' };
  while (Date.now() < deadline) {
    const stats = await svc.sinkStatistics(sourceId, sinkId);
    const total = stats.total?.recordsCount ?? 0;
    const imported = stats.levels?.target?.recordsCount ?? 0;
    const settled = total === imported && imported >= atLeast && imported === previous;
    state = { imported, settled, stats: JSON.stringify(stats) };
    if (settled) break;
    previous = total === imported ? imported : -1;
    await sleep(500);
  }
  return state;
}

export interface Sent {
  /** Every event id the clients sent. */
  ids: readonly string[];
  /** The events answered 200. */
  acked: ReadonlySet<string>;
  /** How often each event was sent. */
  attempts: ReadonlyMap<string, number>;
}

/**
 * Asserts exactly-once delivery of the sent events into `rows` (the table's event ids);
 * `why` goes into the message of a missing event. Returns how often each id is in the table.
 */
export function expectEveryAckedOnce(rows: readonly string[], sent: Sent, why: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const n of rows) counts.set(n, (counts.get(n) ?? 0) + 1);
  const known = new Set(sent.ids);
  expect(rows.filter((n) => !known.has(n)), 'rows that no client sent').toEqual([]);
  expect([...sent.acked].filter((id) => !counts.has(id)), `acknowledged events missing from the table (${why})`).toEqual([]);
  expect([...counts].filter(([id, n]) => n > 1 && (sent.attempts.get(id) ?? 1) === 1), 'events in the table more than once although sent once').toEqual([]);
  expect([...counts].filter(([id, n]) => n > (sent.attempts.get(id) ?? 1)), 'events in the table more often than they were sent').toEqual([]);
  return counts;
}
