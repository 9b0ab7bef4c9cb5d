/**
 * The "Layout" section of docs/contributing.md matches the tree: every folder of src/ that holds code is named
 * there (as a line of its own, `src/<path>/`, or as `<name>/` in its parent's line; vendored
 * .proto files need not be), and every `src/...`, `test/...` or `packages/...` path the section
 * names exists. A folder added, moved or renamed without that page fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

function layoutBlock(): string {
  const readme = readFileSync(join(ROOT, 'docs', 'contributing.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Layout\n'));
  const start = section.indexOf('```\n');
  return section.slice(start + 4, section.indexOf('```', start + 4));
}

/** Whether a folder holds code (a .ts or .tsx file, at any depth); vendored data (.proto files) does not. */
function holdsCode(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? holdsCode(join(dir, e.name)) : /\.tsx?$/.test(e.name)));
}

function foldersUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (holdsCode(path)) out.push(relative(ROOT, path), ...foldersUnder(path));
  }
  return out;
}

/** The block's entries: each line that starts a path, with the description lines below it. */
function entries(block: string): Map<string, string> {
  const map = new Map<string, string>();
  let current = '';
  for (const line of block.split('\n')) {
    const head = /^(src\/\S*|test\/\S*)\s/.exec(line + ' ');
    if (head) {
      current = head[1];
      map.set(current, line);
    } else if (current) {
      map.set(current, `${map.get(current)}\n${line}`);
    }
  }
  return map;
}

describe("the README's layout", () => {
  const block = layoutBlock();
  const named = entries(block);

  it('names every folder of src/', () => {
    const missing = foldersUnder(join(ROOT, 'src')).filter((folder) => {
      // Its own entry, or an entry of a folder in it (src/tools/kafka-broker/ names src/tools).
      if ([...named.keys()].some((entry) => entry.startsWith(`${folder}/`))) return false;
      // Else `<name>/` in the entry of its nearest named ancestor.
      const parts = folder.split('/');
      for (let i = parts.length - 1; i > 0; i--) {
        const ancestor = named.get(`${parts.slice(0, i).join('/')}/`);
        if (ancestor) return !new RegExp(`(^|[\\s(,])${parts.slice(i).join('/')}/`).test(ancestor);
      }
      return true;
    });
    expect(missing).toEqual([]);
  });

  it('names only paths that exist', () => {
    const paths = [...block.matchAll(/(?:^|[\s(])((?:src|test|packages)\/[\w./-]+)/g)].map((m) => m[1].replace(/[.,;:)]+$/, ''));
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});
