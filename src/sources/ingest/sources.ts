/**
 * Who may ingest: the ingestion endpoint looks a source up by id on every request and needs
 * its current definition (type, secret, disabled/deleted) and its enabled sinks (for the
 * `sync.wait` decision and the verbose answer). OTLP over gRPC has no path to carry the id: it
 * finds the source by its secret alone (secrets are random and unique per source).
 */
import { createHash } from 'node:crypto';
import type { MetadataReader } from '../../ports/metadata-store.js';
import type { Sink, Source, SourceType } from '../../model/definition.js';
import { keys, readSinks, readSources } from '../../definition/repository.js';
import { secretMatches } from './secret.js';

export interface IngestTarget {
  /** The source as stored, possibly disabled; never a deleted one. */
  source: Source;
  /** Its sinks that are neither disabled nor deleted, ordered by id. */
  enabledSinks: Sink[];
}

export interface IngestSources {
  /** The live (not deleted) source with this id in the served branch, or undefined. */
  lookup(sourceId: string): IngestTarget | undefined;
  /**
   * The live source of this type whose secret is `secret` (compared in constant time), or
   * undefined; like lookup() otherwise (a disabled source is found, with no sinks).
   */
  lookupBySecret(secret: string, type: SourceType): IngestTarget | undefined;
  /** Definitions changed (a management task finished, a secret was rotated): read them again. */
  invalidate(): void;
}

export interface MetadataIngestSourcesOptions {
  /**
   * How long the enabled sinks of a source are reused before they are read again, at most
   * (default 1000 ms; 0 reads them on every request). invalidate() drops them at once.
   */
  sinksTtlMs?: number;
  now?: () => number;
}

interface CachedSinks {
  /** The source version the list was read under; any change of the source drops it. */
  sourceVersion: number;
  readAt: number;
  enabledSinks: Sink[];
}

/**
 * IngestSources over the metadata store, in one branch (the project's default).
 *
 * Found sources are kept in memory until `invalidate()`, which the service calls after every
 * change of definitions (every management task, every secret rotation), so a rotated secret,
 * a disabled or a deleted source takes effect on the very next request. Unknown ids are not
 * cached (random ids must not grow memory). Decoding the sinks costs several times
 * more (a range read of up to 100 definitions with their mappings), and they only decide
 * whether the answer waits for durability and what the verbose answer lists, never whether a
 * record is accepted or where it goes (the record is appended to the source's topic in any
 * case; the source router delivers it to the sinks enabled when it reads it). So the enabled
 * sinks are reused for `sinksTtlMs`, and read again at once when the source's version changes.
 */
export class MetadataIngestSources implements IngestSources {
  private readonly sinks = new Map<string, CachedSinks>();
  private readonly sources = new Map<string, Source>();
  /** SHA-256 of each live source's secret -> its id; built on the first lookup by secret, dropped by invalidate(). */
  private bySecret?: Map<string, string>;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: MetadataReader,
    private readonly branchId: number,
    options: MetadataIngestSourcesOptions = {},
  ) {
    this.ttlMs = options.sinksTtlMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  lookup(sourceId: string): IngestTarget | undefined {
    // Ids are path segments; a slash or an empty id can never name a stored source.
    if (sourceId === '' || sourceId.includes('/')) return undefined;
    let source = this.sources.get(sourceId);
    if (!source) {
      source = this.store.get<Source>(keys.source(this.branchId, sourceId));
      if (!source || source.deleted) {
        this.sinks.delete(sourceId);
        return undefined;
      }
      this.sources.set(sourceId, source);
    }
    if (source.disabled) return { source, enabledSinks: [] };
    return { source, enabledSinks: this.enabledSinks(source) };
  }

  lookupBySecret(secret: string, type: SourceType): IngestTarget | undefined {
    // The index is keyed by the secret's digest, so finding the entry reveals nothing about a
    // secret through timing; the stored secret is then compared in constant time. One scan of
    // the branch's sources per change of definitions: unknown secrets miss the index cheaply.
    this.bySecret ??= this.secretIndex();
    const sourceId = this.bySecret.get(secretDigest(secret));
    const target = sourceId === undefined ? undefined : this.lookup(sourceId);
    if (!target || target.source.type !== type || !secretMatches(secret, target.source.secret)) return undefined;
    return target;
  }

  /** Forgets every cached source, sink list and the secret index (e.g. after a bulk change). */
  invalidate(): void {
    this.sinks.clear();
    this.sources.clear();
    this.bySecret = undefined;
  }

  private secretIndex(): Map<string, string> {
    const index = new Map<string, string>();
    for (const source of readSources(this.store, this.branchId)) {
      if (!source.deleted) index.set(secretDigest(source.secret), source.sourceId);
    }
    return index;
  }

  private enabledSinks(source: Source): Sink[] {
    const now = this.now();
    const cached = this.sinks.get(source.sourceId);
    if (cached && cached.sourceVersion === source.version.number && now - cached.readAt < this.ttlMs) return cached.enabledSinks;
    const enabledSinks = readSinks(this.store, this.branchId, source.sourceId).filter((s) => !s.deleted && !s.disabled);
    if (this.ttlMs > 0) this.sinks.set(source.sourceId, { sourceVersion: source.version.number, readAt: now, enabledSinks });
    return enabledSinks;
  }
}

function secretDigest(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64');
}
