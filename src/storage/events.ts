import { randomUUID } from 'node:crypto';
import type { KeySpace, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import type { StorageEvent } from '../contract/storage-events.js';

/** A Storage event: the API contract's (src/contract/storage-events.ts). */
export type { StorageEvent };

export type NewEvent = Pick<StorageEvent, 'message' | 'component' | 'type'> & Partial<Omit<StorageEvent, 'id' | 'uuid' | 'created'>>;

export interface EventFilter {
  runId?: string;
  component?: string;
  configurationId?: string;
  /** Only events with a greater id / at most this id. */
  sinceId?: string;
  maxId?: string;
  /** Substring of the message (case-insensitive). */
  q?: string;
  limit?: number;
  offset?: number;
  sortOrder?: 'asc' | 'desc';
  /** Only events this returns true for (the reader's token scope); paging counts only those. */
  visible?: (event: StorageEvent) => boolean;
}

const EVENT = 'storage/event/';
const BY_RUN = 'storage/eventByRun/';
const SEQUENCE = 'storage/sequence/event';
/** The events, their index by run and their sequence: node-local (jobs run where they were created). */
export const EVENT_KEY_SPACES: readonly KeySpace[] = [
  { prefix: EVENT, shared: false },
  { prefix: BY_RUN, shared: false },
  { prefix: SEQUENCE, shared: false },
];
const MAX_LIMIT = 10_000;

/** Ids are numbers; keys are zero-padded so that the store's key order is the id order. */
const pad = (id: number) => String(id).padStart(15, '0');

/**
 * The project's event log. Events of a job are also indexed by run id, the filter the job log
 * is read with, so reading one job's log does not scan every event.
 */
export class EventService {
  constructor(private readonly store: MetadataStore) {}

  /** Records events in one transaction; returns them with ids. */
  record(events: NewEvent[], tx?: MetadataTx): StorageEvent[] {
    if (events.length === 0) return [];
    const run = (t: MetadataTx) => {
      let next = t.get<number>(SEQUENCE) ?? 0;
      const created = new Date().toISOString();
      const out = events.map((e) => {
        next++;
        const event: StorageEvent = {
          event: 'ext.' + e.component,
          description: '',
          runId: null,
          configurationId: null,
          objectId: '',
          objectName: '',
          objectType: '',
          context: {},
          params: {},
          results: {},
          performance: {},
          ...e,
          id: String(next),
          uuid: randomUUID(),
          created,
        };
        t.put(EVENT + pad(next), event);
        if (event.runId) t.put(`${BY_RUN}${event.runId}/${pad(next)}`, next);
        return event;
      });
      t.put(SEQUENCE, next);
      return out;
    };
    return tx ? run(tx) : this.store.transact(run);
  }

  /**
   * Events matching the filter, newest first unless `sortOrder` is asc. Candidates are read
   * lazily in that order and reading stops once the page is full: a job's log comes from the
   * run-id index; otherwise ids are walked from the newest (events are never removed, so ids
   * are dense), bounded by sinceId and maxId.
   */
  list(filter: EventFilter = {}): StorageEvent[] {
    const limit = Math.min(filter.limit ?? 100, MAX_LIMIT);
    const offset = filter.offset ?? 0;
    const desc = (filter.sortOrder ?? 'desc') === 'desc';
    const q = filter.q?.toLowerCase();
    const matches = (e: StorageEvent) =>
      (filter.component === undefined || e.component === filter.component) &&
      (filter.configurationId === undefined || e.configurationId === filter.configurationId) &&
      (filter.sinceId === undefined || Number(e.id) > Number(filter.sinceId)) &&
      (filter.maxId === undefined || Number(e.id) <= Number(filter.maxId)) &&
      (q === undefined || e.message.toLowerCase().includes(q)) &&
      (filter.visible === undefined || filter.visible(e));
    const page: StorageEvent[] = [];
    let skipped = 0;
    for (const event of this.candidates(filter, desc)) {
      if (page.length >= limit) break;
      if (!matches(event)) continue;
      if (skipped < offset) skipped++;
      else page.push(event);
    }
    return page;
  }

  private *candidates(filter: EventFilter, desc: boolean): Generator<StorageEvent> {
    if (filter.runId !== undefined) {
      const ids = this.store.list<number>(`${BY_RUN}${filter.runId}/`).map((e) => e.value);
      if (desc) ids.reverse();
      for (const id of ids) {
        const event = this.store.get<StorageEvent>(EVENT + pad(id));
        if (event) yield event;
      }
      return;
    }
    const newest = Math.min(this.store.get<number>(SEQUENCE) ?? 0, filter.maxId !== undefined ? Number(filter.maxId) : Infinity);
    const oldest = filter.sinceId !== undefined ? Number(filter.sinceId) + 1 : 1;
    for (let i = 0; i <= newest - oldest; i++) {
      const event = this.store.get<StorageEvent>(EVENT + pad(desc ? newest - i : oldest + i));
      if (event) yield event;
    }
  }

  get(id: string): StorageEvent | undefined {
    return /^\d+$/.test(id) ? this.store.get<StorageEvent>(EVENT + pad(Number(id))) : undefined;
  }
}
