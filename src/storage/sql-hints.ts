/**
 * What a refused query's answer adds so that the next try works: the tables there are, and
 * how to name one. Bucket and table ids hold dots and dashes (`in.c-events.raw`), so a table is
 * named as the bucket's schema and the table, each in double quotes: `"in.c-events"."raw"`.
 */
import type { QueryRelation } from '../ports/target.js';

/** How many readable tables the answer lists at most. */
const LISTED = 10;

/** `"in.c-events"."raw"` */
export function quotedTableName(bucketId: string, name: string): string {
  return `"${bucketId.replaceAll('"', '""')}"."${name.replaceAll('"', '""')}"`;
}

export interface ReadableTable {
  bucketId: string;
  name: string;
}

/** The answer to a query that reads a relation that is not a table of a bucket (a name not found, most often). */
export function notABucketTable(relation: QueryRelation, readable: readonly ReadableTable[]): string {
  const named = relation.schema === '' || relation.schema === 'main' || relation.schema === 'public' ? `"${relation.table}"` : `"${relation.schema}"."${relation.table}"`;
  return `The query reads ${named}, which is not a table of a bucket.${tablesHint(readable)} Nothing was executed.`;
}

/** " Name a table by its bucket …, as in …. Tables the token can read: …." */
export function tablesHint(readable: readonly ReadableTable[]): string {
  const tables = readable.map((t) => quotedTableName(t.bucketId, t.name)).sort();
  const list = tables.length === 0
    ? 'The token can read no table yet.'
    : `Tables the token can read: ${tables.slice(0, LISTED).join(', ')}${tables.length > LISTED ? ` and ${tables.length - LISTED} more` : ''}.`;
  const example = tables[0] ?? '"in.c-events"."raw"';
  return ` Name a table by its bucket and its name, each in double quotes, as in SELECT * FROM ${example}. ${list}`;
}

// PostgreSQL's and DuckDB's words for a table that is not there.
const NOT_FOUND = /relation "[^"]*" does not exist|Table with name \S+ does not exist/i;

/** True when the database's error says a table the query names does not exist. */
export function namesMissingTable(message: string): boolean {
  return NOT_FOUND.test(message);
}

// A bucket id written without quotes, e.g. FROM in.c-events.raw (a syntax error at the dash).
const UNQUOTED_BUCKET = /(?<!["\w.-])((?:in|out)\.c-[\w-]+)\.([\w-]+)/;

/** A hint when the query names a table as `in.c-bucket.table` without quotes; '' otherwise. */
export function quotingHint(query: string): string {
  const m = UNQUOTED_BUCKET.exec(query);
  if (!m) return '';
  return ` Bucket and table names hold dots and dashes: write ${m[1]}.${m[2]} as ${quotedTableName(m[1], m[2])}.`;
}
