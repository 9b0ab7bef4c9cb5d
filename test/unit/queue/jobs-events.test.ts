/** The job log store (Storage events) on a real LMDB file: filters, order and paging. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { EventService } from '../../../src/storage/events.js';

let dir: string;
let store: LmdbMetadataStore;
let events: EventService;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-events-'));
  store = new LmdbMetadataStore(dir);
  events = new EventService(store);
  events.record([
    { component: 'job-runner', message: 'Replacing variables using inline values.', type: 'info', runId: '10', configurationId: 'c1' },
    { component: 'sluice.echo', message: 'one', type: 'info', runId: '10', configurationId: 'c1' },
    { component: 'sluice.echo', message: 'two', type: 'warn', runId: '11', configurationId: 'c2' },
    { component: 'sluice.echo', message: 'three', type: 'error', runId: '10.12', configurationId: 'c1' },
    { component: 'other', message: 'no run', type: 'info' },
  ]);
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const messages = (list: { message: string }[]) => list.map((e) => e.message);

describe('events', () => {
  it('lists newest first by default, or oldest first', () => {
    expect(messages(events.list())).toEqual(['no run', 'three', 'two', 'one', 'Replacing variables using inline values.']);
    expect(messages(events.list({ sortOrder: 'asc', limit: 2 }))).toEqual(['Replacing variables using inline values.', 'one']);
  });

  it('filters by run id (exactly), component, configuration and text', () => {
    expect(messages(events.list({ runId: '10' }))).toEqual(['one', 'Replacing variables using inline values.']);
    expect(messages(events.list({ runId: '10.12' }))).toEqual(['three']);
    expect(messages(events.list({ component: 'sluice.echo', configurationId: 'c1' }))).toEqual(['three', 'one']);
    expect(messages(events.list({ q: 'VARIABLES' }))).toEqual(['Replacing variables using inline values.']);
  });

  it('pages with offset and limit, and bounds by sinceId and maxId', () => {
    expect(messages(events.list({ offset: 1, limit: 2 }))).toEqual(['three', 'two']);
    expect(messages(events.list({ component: 'sluice.echo', offset: 2 }))).toEqual(['one']);
    expect(messages(events.list({ sinceId: '2', maxId: '4' }))).toEqual(['three', 'two']);
  });

  it('gives each event an id, a uuid, a time and the defaults', () => {
    const [e] = events.list({ limit: 1 });
    expect(e).toMatchObject({ id: '5', component: 'other', runId: null, configurationId: null, event: 'ext.other', params: {} });
    expect(e.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(events.get('5')?.message).toBe('no run');
    expect(events.get('x')).toBeUndefined();
  });
});
