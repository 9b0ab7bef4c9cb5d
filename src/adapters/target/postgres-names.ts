/**
 * PostgreSQL identifiers and literals. A name is always quoted (embedded quotes doubled), so a
 * table id with quotes, dots, unicode or SQL in it stays a name, never SQL. PostgreSQL cuts
 * identifiers to 63 bytes (NAMEDATALEN - 1) without an error, which would let two long names
 * meet: a longer name becomes its first bytes, "_" and 8 hex digits of its SHA-1, so every
 * name maps to one identifier, the same on every node, and short names stay exactly as given.
 */
import { createHash } from 'node:crypto';

const MAX_BYTES = 63;

/** The identifier PostgreSQL keeps for `name` (see above). */
export function pgName(name: string): string {
  if (name.includes('\u0000')) throw new Error('identifiers cannot contain NUL');
  if (Buffer.byteLength(name) <= MAX_BYTES) return name;
  const hash = createHash('sha1').update(name).digest('hex').slice(0, 8);
  let head = '';
  for (const ch of name) {
    if (Buffer.byteLength(head + ch) > MAX_BYTES - 9) break;
    head += ch;
  }
  return `${head}_${hash}`;
}

/** A quoted identifier. */
export function ident(name: string): string {
  return `"${pgName(name).replaceAll('"', '""')}"`;
}

export function qualified(schema: string, table: string): string {
  return `${ident(schema)}.${ident(table)}`;
}

/**
 * A string literal, for the statements that take no parameters (COPY ... TO STDOUT): quotes
 * doubled; a value with a backslash in the escape-string form, so that the setting
 * standard_conforming_strings cannot change its meaning.
 */
export function literal(value: string): string {
  if (value.includes('\u0000')) throw new Error('a PostgreSQL text value cannot contain NUL');
  const quoted = value.replaceAll("'", "''");
  return value.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}
