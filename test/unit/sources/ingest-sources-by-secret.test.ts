/**
 * MetadataIngestSources.lookupBySecret, the lookup of OTLP/gRPC (no path carries the source id):
 * the secret alone finds its live source of the asked type, cached like the lookup by id and
 * read again after invalidate() (a rotated secret, a new, disabled or deleted source).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { keys } from '../../../src/definition/repository.js';
import type { Source } from '../../../src/model/definition.js';
import { MetadataIngestSources } from '../../../src/sources/ingest/sources.js';

const BRANCH = 3;
const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };
let dir: string;
let store: LmdbMetadataStore;

function putSource(sourceId: string, secret: string, extra: Partial<Source> = {}): void {
  const source: Source = { projectId: 1, branchId: BRANCH, sourceId, name: sourceId, description: '', type: 'otlp', secret, version, created: at, ...extra };
  store.transact((tx) => tx.put(keys.source(BRANCH, sourceId), source));
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-by-secret-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('lookup by secret', () => {
  it('finds the live source of the type whose secret it is, and nothing for any other secret or type', () => {
    putSource('otel', 'a'.repeat(48));
    putSource('web', 'b'.repeat(48), { type: 'http' });
    const sources = new MetadataIngestSources(store, BRANCH);
    expect(sources.lookupBySecret('a'.repeat(48), 'otlp')?.source.sourceId).toBe('otel');
    expect(sources.lookupBySecret('b'.repeat(48), 'http')?.source.sourceId).toBe('web');
    // Secrets are per transport: an HTTP source's secret does not find it as an OTLP source.
    expect(sources.lookupBySecret('b'.repeat(48), 'otlp')).toBeUndefined();
    for (const wrong of ['', 'a'.repeat(47), 'a'.repeat(49), 'A'.repeat(48), 'otel']) expect(sources.lookupBySecret(wrong, 'otlp'), wrong).toBeUndefined();
  });

  it('follows new, rotated, disabled and deleted sources after invalidate()', () => {
    const sources = new MetadataIngestSources(store, BRANCH);
    expect(sources.lookupBySecret('c'.repeat(48), 'otlp')).toBeUndefined();
    putSource('late', 'c'.repeat(48));
    // Cached until the definitions change (the service calls invalidate() after every task).
    expect(sources.lookupBySecret('c'.repeat(48), 'otlp')).toBeUndefined();
    sources.invalidate();
    expect(sources.lookupBySecret('c'.repeat(48), 'otlp')?.source.sourceId).toBe('late');

    putSource('late', 'd'.repeat(48));
    sources.invalidate();
    expect(sources.lookupBySecret('c'.repeat(48), 'otlp')).toBeUndefined();
    expect(sources.lookupBySecret('d'.repeat(48), 'otlp')?.source.sourceId).toBe('late');

    putSource('late', 'd'.repeat(48), { disabled: { ...at, reason: 'API' } });
    sources.invalidate();
    expect(sources.lookupBySecret('d'.repeat(48), 'otlp')).toMatchObject({ source: { sourceId: 'late', disabled: {} }, enabledSinks: [] });

    putSource('late', 'd'.repeat(48), { deleted: at });
    sources.invalidate();
    expect(sources.lookupBySecret('d'.repeat(48), 'otlp')).toBeUndefined();
  });

  it('reads the sources once per change of definitions, not once per unknown secret', () => {
    let lists = 0;
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'list') {
          return (...args: unknown[]) => {
            lists++;
            return (target.list as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const sources = new MetadataIngestSources(counting, BRANCH, { sinksTtlMs: 60_000 });
    for (let i = 0; i < 100; i++) sources.lookupBySecret(`unknown-${i}`.padEnd(48, 'x'), 'otlp');
    sources.lookupBySecret('a'.repeat(48), 'otlp');
    const afterFirst = lists;
    // One list of the sources, and one of the found source's sinks.
    expect(afterFirst).toBe(2);
    for (let i = 0; i < 100; i++) sources.lookupBySecret('a'.repeat(48), 'otlp');
    expect(lists).toBe(afterFirst);
    sources.invalidate();
    sources.lookupBySecret('zzz', 'otlp');
    expect(lists).toBe(afterFirst + 1);
  });
});
