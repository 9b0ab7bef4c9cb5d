/**
 * The purge of a sink deleted for good: everything the levels hold of it goes, of each of its
 * partition instances (instances.ts), in one transaction; each key space's owner forgets its
 * part inside that transaction.
 */
import type { MetadataStore } from '../ports/metadata-store.js';
import { forgetFilesIn } from './files-repository.js';
import { sinkInstances } from './instances.js';
import type { SinkKey, SliceEntry } from '../model/levels.js';
import { forgetPositionsIn } from './positions.js';
import { forgetArchiveIn, forgetResetMarkerIn } from './statistics-archive.js';
import { forgetFilteredIn } from './filtered-counts.js';

/**
 * Forgets everything stored about a sink's data (the sink was deleted for good): files,
 * slices, the consumer offset and statistics, of the sink and of all its partition instances
 * (instances.ts), in one transaction. Given an instance id, only that instance. Returns the
 * slices (their sinkId is the instance id), whose local and staged files the caller removes.
 */
export function purgeSink(store: MetadataStore, sink: SinkKey): SliceEntry[] {
  return store.transact((tx) => {
    const slices: SliceEntry[] = [];
    for (const instance of sinkInstances(tx, sink)) {
      slices.push(...forgetFilesIn(tx, instance));
      forgetPositionsIn(tx, instance);
      forgetArchiveIn(tx, instance);
      forgetFilteredIn(tx, instance);
    }
    // The reset marker is kept per sink, not per instance.
    forgetResetMarkerIn(tx, sink);
    return slices;
  });
}
