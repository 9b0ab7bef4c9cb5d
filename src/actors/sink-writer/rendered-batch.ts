/**
 * What a sink writer reads off a rendered batch before it writes it: the records the mapping
 * refused, as mapping failures to keep, and the receive times of the records it writes.
 */
import type { LoggedRecord } from '../../ports/event-log.js';
import { encodedReceivedAt } from '../../pipeline/record-codec.js';
import { toFailureRecord, type MappingFailure } from '../../levels/mapping-failures.js';
import type { RenderedRows } from '../render/renderer.js';

/** The records the mapping refused, to be kept; throws when the mapping itself does not compile. */
export function failuresOf(batch: readonly LoggedRecord[], rendered: RenderedRows): MappingFailure[] {
  if (rendered.error !== undefined) {
    throw new Error(rendered.error.startsWith('rendering failed') ? rendered.error : `the columns of the sink's file do not compile: ${rendered.error}`);
  }
  const failedAt = new Date().toISOString();
  return rendered.failures.map((f) => ({ offset: batch[f.index].offset, failedAt, reason: f.reason, record: toFailureRecord(batch[f.index].record) }));
}

/** Receive time of a logged record, read from its encoded form when it has one (no decoding). */
export function receivedAtIso(r: LoggedRecord): string {
  return new Date(r.encoded ? encodedReceivedAt(r.encoded) : r.record.receivedAt.getTime()).toISOString();
}
