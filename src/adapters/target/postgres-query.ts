/**
 * Reading a PostgreSQL plan and result for the read-only SQL endpoint.
 */

interface PlanNode {
  'Node Type'?: string;
  'Relation Name'?: string;
  Schema?: string;
  Plans?: PlanNode[];
  [key: string]: unknown;
}

/**
 * The relations a statement reads, from its `EXPLAIN (VERBOSE, FORMAT JSON)` plan (the planner
 * has resolved names, views and CTEs by then), and whether any node of it writes.
 */
export function readRelations(plan: unknown): { relations: { schema: string; table: string }[]; writes: boolean } {
  const relations = new Map<string, { schema: string; table: string }>();
  let writes = false;
  const visit = (node: PlanNode | undefined) => {
    if (!node || typeof node !== 'object') return;
    // ModifyTable: INSERT, UPDATE, DELETE, MERGE (also in a CTE); LockRows: SELECT ... FOR UPDATE/SHARE.
    if (node['Node Type'] === 'ModifyTable' || node['Node Type'] === 'LockRows') writes = true;
    if (typeof node['Relation Name'] === 'string') {
      const schema = String(node.Schema ?? '');
      relations.set(`${schema}\u0000${node['Relation Name']}`, { schema, table: node['Relation Name'] });
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  for (const entry of Array.isArray(plan) ? plan : [plan]) visit((entry as { Plan?: PlanNode }).Plan);
  return { relations: [...relations.values()], writes };
}

/** Names of the common type OIDs (pg_type); others by number. */
const TYPES: Record<number, string> = {
  16: 'boolean', 17: 'bytea', 18: 'char', 19: 'name', 20: 'bigint', 21: 'smallint', 23: 'integer', 25: 'text',
  26: 'oid', 114: 'json', 700: 'real', 701: 'double precision', 1042: 'character', 1043: 'character varying',
  1082: 'date', 1083: 'time', 1114: 'timestamp', 1184: 'timestamptz', 1186: 'interval', 1700: 'numeric',
  2950: 'uuid', 3802: 'jsonb', 1009: 'text[]', 1007: 'integer[]', 1016: 'bigint[]',
};

export function typeName(oid: number): string {
  return TYPES[oid] ?? `oid ${oid}`;
}

/** A value as JSON can carry it: dates as ISO text, bytes as hex, the rest as pg parsed it. */
export function pgValue(v: unknown): unknown {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? String(v) : v.toISOString();
  if (Buffer.isBuffer(v)) return `\\x${v.toString('hex')}`;
  if (Array.isArray(v)) return v.map(pgValue);
  if (typeof v === 'bigint') return v.toString();
  return v;
}
