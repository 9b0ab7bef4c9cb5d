import { createHash } from 'node:crypto';
import type { KeySpace, MetadataReader, MetadataTx } from '../ports/metadata-store.js';
import { DomainError } from '../domain-errors.js';
import type { By, Entity, Sink, Source } from '../model/definition.js';
import type { Page } from '../contract/stream-sources.js';

/**
 * Where definitions live in the metadata store. An entity key holds the current state (active,
 * disabled or soft-deleted); every version is also kept as a full snapshot under its number,
 * zero-padded so that keys sort numerically.
 */
export const keys = {
  sources: (branchId: number) => `definition/source/${branchId}/`,
  source: (branchId: number, sourceId: string) => `definition/source/${branchId}/${sourceId}`,
  sourceVersions: (branchId: number, sourceId: string) => `definition/version/source/${branchId}/${sourceId}/`,
  sinks: (branchId: number, sourceId: string) => `definition/sink/${branchId}/${sourceId}/`,
  sink: (branchId: number, sourceId: string, sinkId: string) => `definition/sink/${branchId}/${sourceId}/${sinkId}`,
  sinkVersions: (branchId: number, sourceId: string, sinkId: string) => `definition/version/sink/${branchId}/${sourceId}/${sinkId}/`,
};

/**
 * The definitions' keys: sources, sinks, their versions, and the sinks' tokens
 * (sink-lifecycle.ts, `definition/sinkToken/`); shared by the cluster's nodes.
 */
export const DEFINITION_KEY_SPACES: readonly KeySpace[] = [{ prefix: 'definition/', shared: true }];

export const MAX_VERSIONS = 1000;

export function padVersion(n: number): string {
  return String(n).padStart(10, '0');
}

/** The fields that make up a definition (what a version hash covers and a rollback restores). */
export function sourceSpec(s: Source): Record<string, unknown> {
  return { name: s.name, description: s.description, type: s.type, config: s.config ?? [] };
}

export function sinkSpec(s: Sink): Record<string, unknown> {
  return { name: s.name, description: s.description, type: s.type, table: s.table, allowedSignals: s.allowedSignals ?? [], config: s.config ?? [] };
}

/** 16 hex characters of a hash of the definition's own fields. */
export function structureHash(spec: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
}

/**
 * Stores `entity` as its next version. The version object is built here so that every change
 * path (create, update, settings, disable, enable, rollback) numbers and hashes alike.
 */
export function saveNewVersion<T extends Entity>(
  tx: MetadataTx,
  entityKey: string,
  versionsPrefix: string,
  entity: T,
  spec: Record<string, unknown>,
  description: string,
  by: By,
  at: string,
): T {
  const number = (entity.version?.number ?? 0) + 1;
  if (number > MAX_VERSIONS) {
    throw new DomainError('limitReached', 'resourceLimitReached', `Version limit reached: at most ${MAX_VERSIONS} versions are kept per object.`);
  }
  const saved: T = { ...entity, version: { number, hash: structureHash(spec), description, at, by } };
  tx.put(entityKey, saved);
  tx.put(versionsPrefix + padVersion(number), saved);
  return saved;
}

export type { Page };

/**
 * One page of items sorted by id; `lastId` is the id of the page's last item ("" if none).
 * `totalCount` counts every item, except for version lists, where the reference counts only
 * the items after `afterId` (`count: 'afterId'`).
 */
export function paginate<T>(
  items: T[],
  idOf: (item: T) => string,
  afterId: string,
  limit: number,
  count: 'all' | 'afterId' = 'all',
): { items: T[]; page: Page } {
  const sorted = [...items].sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
  const after = afterId === '' ? sorted : sorted.filter((i) => idOf(i) > afterId);
  const pageItems = after.slice(0, limit);
  return {
    items: pageItems,
    page: { limit, totalCount: count === 'all' ? sorted.length : after.length, afterId, lastId: pageItems.length > 0 ? idOf(pageItems[pageItems.length - 1]) : '' },
  };
}

export function readSources(store: MetadataReader, branchId: number): Source[] {
  return store.list<Source>(keys.sources(branchId)).map((e) => e.value);
}

export function readSinks(store: MetadataReader, branchId: number, sourceId: string): Sink[] {
  return store.list<Sink>(keys.sinks(branchId, sourceId)).map((e) => e.value);
}
