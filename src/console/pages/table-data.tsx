/** Rows as a table: the data preview (CSV strings) and SQL answers (JSON values). */
import type { ComponentChildren } from 'preact';

function cell(value: unknown): { text: string; isNull: boolean } {
  if (value === null || value === undefined) return { text: 'NULL', isNull: true };
  if (typeof value === 'object') return { text: JSON.stringify(value), isNull: false };
  return { text: String(value), isNull: false };
}

export function DataTable({ columns, rows, caption }: { columns: { name: string; type?: string }[]; rows: unknown[][]; caption?: ComponentChildren }) {
  return (
    <div class="scroll">
      <table class="list data">
        {caption && <caption class="sr-only">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col">{c.name}{c.type && <span class="type muted">{c.type}</span>}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 && <tr><td colSpan={Math.max(columns.length, 1)} class="muted">No rows.</td></tr>}
          {rows.map((row, r) => (
            <tr key={r}>
              {columns.map((_, i) => {
                const { text, isNull } = cell(row[i]);
                return <td key={i} class={isNull ? 'null' : undefined}>{text}</td>;
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
