/**
 * The API contract (see stream-sources.ts for why the types are the source): a mapping proposed
 * from a source's recent records, `POST .../sources/{sourceId}/sinks/infer` (Sluice's own;
 * nothing is saved: the user edits the columns and creates the sink with them).
 */
import type { Column, Signal } from '../model/definition.js';

/**
 * What a sampled value was, as far as the base types go: `integer` fits a 64-bit integer;
 * `decimal` is written without exponent and fits NUMERIC (at most 29 digits before the point
 * and 9 after it); `float` is any other number a double holds; `hugeNumber` one it does not
 * (`1e400`); `date` a string `YYYY-MM-DD`; `timestamp` a string `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`;
 * `string` any other string.
 */
export type ValueKind =
  | 'null' | 'boolean' | 'integer' | 'decimal' | 'float' | 'hugeNumber'
  | 'date' | 'timestamp' | 'string' | 'object' | 'array';

/** A field of the sampled bodies. */
export interface ProposedField {
  /** Its path in the body, as a `path` column takes it (`user.id`). */
  path: string;
  /** Sampled bodies that have it (a null value included). */
  seen: number;
  /** How many of its values were of each kind. */
  types: Partial<Record<ValueKind, number>>;
  /** The name of its column in `columns`; absent when it has none (then `note` says why). */
  column?: string;
  note?: string;
}

/** POST .../sources/{sourceId}/sinks/infer: the body (optional). */
export interface MappingProposalBody {
  /** How many of the newest records to sample (1 to 1000, default 100). */
  limit?: number;
  /** Sample only records of these OTLP signals (as a sink's `allowedSignals`; empty: all). */
  signals?: Signal[];
}

/** POST .../sources/{sourceId}/sinks/infer: the answer. */
export interface MappingProposal {
  projectId: number;
  branchId: number;
  sourceId: string;
  /** Records read from the source's log, newest first. */
  sampledRecords: number;
  /** Of them, not used: a body that is not a JSON object (or form), or a signal not asked for. */
  skippedRecords: number;
  /** Present (true) only when the reading stopped at the server's byte budget (`--infer-max-bytes`) before `limit`. */
  limitedByBytes?: true;
  /** A mapping to edit and save: a `datetime` column, then one `path` column per field, each with a `dataType`. */
  columns: Column[];
  /** Every field seen, its values' kinds and its column. */
  fields: ProposedField[];
  /** Present (true) only when the bodies had more distinct fields than are tracked (1000): the others are left out. */
  fieldsTruncated?: true;
}
