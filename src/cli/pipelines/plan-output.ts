/**
 * A plan for people (`sluice diff`, `sluice push --dry-run`): grouped by source, each change on
 * its line, each field that differs under it as `path: old -> new`; and for scripts
 * (`--format json`): the changes as they are.
 */
import type { Change, Difference } from './plan.js';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A value on one line: strings and everything else as JSON; absent as what absence means there. */
function shown(value: unknown, path: string): string {
  if (value === undefined) return path.startsWith('settings') ? '(default)' : path === 'disabled' ? 'false' : '(none)';
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

function differenceLine(d: Difference): string {
  return `${d.path}: ${shown(d.from, d.path)} -> ${shown(d.to, d.path)}`;
}

function what(c: Change, dir: string): string {
  switch (c.action) {
    case 'create':
      return `create${c.summary ? `, ${c.summary}` : ''}`;
    case 'restore':
      return `restore: ${c.summary ?? 'deleted on the server'}`;
    case 'update':
      return 'update';
    case 'delete':
      return c.sinkId === undefined
        ? `would delete with --delete (on the server, no file in ${dir})`
        : 'would delete with --delete (on the server, not in the file)';
  }
}

/** The summary line: how many changes of each kind, or that nothing differs. */
export function summaryLine(changes: readonly Change[], dir: string, counts: { sources: number; sinks: number }): string {
  if (changes.length === 0) return `no differences: the server matches ${dir} (${plural(counts.sources, 'source')}, ${plural(counts.sinks, 'sink')})`;
  const n = (a: Change['action']) => changes.filter((c) => c.action === a).length;
  const parts = [
    n('create') && `${n('create')} to create`,
    n('update') && `${n('update')} to update`,
    n('restore') && `${n('restore')} to restore`,
    n('delete') && `${n('delete')} only with --delete`,
  ].filter(Boolean);
  return `${plural(changes.length, 'change')}: ${parts.join(', ')}`;
}

/** The plan as text, grouped by source. */
export function planText(changes: readonly Change[], dir: string): string[] {
  const lines: string[] = [];
  let source: string | undefined;
  for (const c of changes) {
    if (c.sourceId !== source) {
      source = c.sourceId;
      const own = changes.find((x) => x.sourceId === source && x.sinkId === undefined);
      const file = c.file ?? own?.file;
      lines.push(`source ${source}${file ? ` (${file})` : ''}: ${own ? what(own, dir) : 'its sinks differ'}`);
      if (own) for (const d of own.differences) lines.push(`    ${differenceLine(d)}`);
    }
    if (c.sinkId === undefined) continue;
    lines.push(`  sink ${c.sinkId}: ${what(c, dir)}`);
    for (const d of c.differences) lines.push(`      ${differenceLine(d)}`);
  }
  return lines;
}

/** The plan for scripts: every change with its differences (`from`/`to` absent where a side has none). */
export function planJson(changes: readonly Change[], dir: string, branch: string): string {
  return `${JSON.stringify({ directory: dir, branch, differs: changes.length > 0, changes }, null, 2)}\n`;
}
