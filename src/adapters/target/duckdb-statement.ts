/**
 * What a statement reads, from DuckDB's parse tree (`json_serialize_sql`), for the read-only
 * SQL endpoint: the parser alone, before anything is bound or run.
 */
import { QueryRefusedError } from '../../ports/target.js';

export interface StatementTree {
  /** Base tables the statement names (CTE references left out). */
  relations: { catalog: string; schema: string; table: string }[];
  /** Table functions other than the harmless generators (read_csv, glob, query, ...). */
  tableFunctions: string[];
}

/** Table functions that read nothing outside the query. */
const GENERATORS = new Set(['range', 'generate_series', 'unnest']);
/** Table references that only combine others. */
const COMBINING = new Set(['JOIN', 'SUBQUERY', 'EMPTY', 'EXPRESSION_LIST', 'PIVOT']);

/**
 * Reads the output of `json_serialize_sql(sql)`: refuses (QueryRefusedError) anything but one
 * SELECT statement, and lists what it reads. A table reference of a kind not known to be
 * harmless (SHOW, a table function reading files) is reported, never let through unseen.
 */
export function readStatementTree(serialized: unknown): StatementTree {
  const tree = serialized as { error?: boolean; error_message?: string; error_type?: string; statements?: unknown[] };
  if (tree.error) {
    const message = tree.error_message ?? 'the statement could not be read';
    if (/Only SELECT statements/i.test(message)) {
      throw new QueryRefusedError('write', 'Only one statement that reads (SELECT) can run here. Nothing was executed.');
    }
    throw new QueryRefusedError('invalid', message);
  }
  const statements = tree.statements ?? [];
  if (statements.length !== 1) throw new QueryRefusedError('invalid', statements.length === 0 ? 'The query is empty.' : 'Only one statement can run at a time.');

  const ctes = new Set<string>();
  const tables: { catalog: string; schema: string; table: string }[] = [];
  const tableFunctions: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const obj = node as Record<string, unknown>;
    const cteMap = (obj.cte_map as { map?: { key: string }[] } | undefined)?.map;
    for (const entry of cteMap ?? []) ctes.add(entry.key.toLowerCase());
    // A table reference: a "type", an "alias" and a "sample" (expressions have a "class", query nodes no alias).
    if (typeof obj.type === 'string' && 'alias' in obj && 'sample' in obj && !('class' in obj)) {
      if (obj.type === 'BASE_TABLE') {
        tables.push({ catalog: String(obj.catalog_name ?? ''), schema: String(obj.schema_name ?? ''), table: String(obj.table_name ?? '') });
      } else if (obj.type === 'TABLE_FUNCTION') {
        const name = String((obj.function as { function_name?: string } | undefined)?.function_name ?? '?');
        if (!GENERATORS.has(name.toLowerCase())) tableFunctions.push(name);
      } else if (!COMBINING.has(obj.type)) {
        tableFunctions.push(obj.type.toLowerCase());
      }
    }
    for (const value of Object.values(obj)) visit(value);
  };
  visit(statements[0]);
  const relations = tables.filter((t) => !(t.catalog === '' && t.schema === '' && ctes.has(t.table.toLowerCase())));
  return { relations, tableFunctions };
}
