import { DomainError } from '../domain-errors.js';
import { DATA_TYPES_OF, KEY_COLUMN_TYPES, type Column, type MappingFilter } from './definition.js';

/**
 * Checks of a mapping the model cannot do itself (they need the template engine or the
 * renderers): templates and the filter that compile, typed defaults that convert. Returns the
 * message of the first failure (`Column "x" template is invalid: <error>`, `Filter is invalid:
 * <error>`) or undefined.
 */
export type MappingChecker = (columns: Column[], filter?: MappingFilter) => Promise<string | undefined>;

/** Columns of one primary key at most: PostgreSQL's limit of an index (INDEX_MAX_KEYS). */
export const MAX_PRIMARY_KEY_COLUMNS = 32;

/**
 * The bytes a record's key values may hold in all (split evenly between the key's columns): a
 * PostgreSQL btree entry holds about 2.7 kB, and a longer key would make the import fail.
 */
export const MAX_PRIMARY_KEY_BYTES = 2000;

/** The names of the primary key's columns, in mapping order (empty: no key). */
export function primaryKeyOf(columns: readonly Column[]): string[] {
  return columns.filter((c) => c.primaryKey === true).map((c) => c.name);
}

function invalid(message: string): DomainError {
  return new DomainError('invalid', 'badRequest', message);
}

/** A column's data type and key flag, checked against its column type. */
function checkTypeAndKey(c: Column): void {
  if (c.dataType !== undefined && !DATA_TYPES_OF[c.type].includes(c.dataType)) {
    const allowed = DATA_TYPES_OF[c.type];
    throw invalid(`Column "${c.name}" of type "${c.type}" cannot have the dataType "${c.dataType}": ` +
      (allowed.length === 1 ? `its values are ${allowed[0]}.` : `it may be ${allowed.slice(0, -1).join(', ')} or ${allowed[allowed.length - 1]}.`));
  }
  if (c.primaryKey !== true) return;
  if (!KEY_COLUMN_TYPES.includes(c.type)) {
    throw invalid(`Column "${c.name}" of type "${c.type}" cannot be part of the primary key: its values have no size limit and a key is indexed; ` +
      `key columns are of type ${KEY_COLUMN_TYPES.map((t) => `"${t}"`).join(', ')} (a path column can take the part of the body that identifies a record).`);
  }
  if (c.dataType === 'JSON') {
    throw invalid(`Column "${c.name}" of dataType "JSON" cannot be part of the primary key: JSON values cannot be compared as a key is.`);
  }
}

/**
 * Checks of a sink mapping the JSON schema cannot express: unique column names, the fields
 * each column type needs, the data types a column type may have and the columns that may be
 * part of the primary key, then `checkMore` (templates, the filter, typed defaults; 400 with the
 * position of a syntax error).
 */
export async function checkColumns(columns: Column[], checkMore: MappingChecker, filter?: MappingFilter): Promise<void> {
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw invalid(`Column "${c.name}" is defined more than once: column names must be unique.`);
    seen.add(c.name);
    if (c.type === 'path' && c.path === undefined) throw invalid(`Column "${c.name}" of type "path" needs the field "path".`);
    if (c.type === 'template' && !c.template) throw invalid(`Column "${c.name}" of type "template" needs the field "template".`);
    checkTypeAndKey(c);
  }
  const key = primaryKeyOf(columns);
  if (key.length > MAX_PRIMARY_KEY_COLUMNS) {
    throw invalid(`The primary key has ${key.length} columns; it may have ${MAX_PRIMARY_KEY_COLUMNS} at most.`);
  }
  const invalidMore = await checkMore(columns, filter);
  if (invalidMore) throw invalid(invalidMore);
}
