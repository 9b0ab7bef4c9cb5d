/**
 * Every relative link of the README, SECURITY.md and the pages of docs/ leads somewhere: the file
 * exists, and an `#anchor` is a heading of it (GitHub's anchors: lower case, punctuation dropped,
 * spaces as hyphens). Links inside code are not links.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

const pages = ['README.md', 'SECURITY.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced blocks. */
function unfenced(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** The text outside fenced blocks and inline code. */
function prose(markdown: string): string {
  return unfenced(markdown).replace(/`[^`\n]*`/g, '');
}

function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const headings = unfenced(readFileSync(file, 'utf8'))
    .split('\n')
    .filter((l) => /^#{1,6} /.test(l))
    .map((l) => anchorOf(l.replace(/^#+ /, '').replace(/`/g, '')));
  return new Set(headings);
}

function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?|mailto):/.test(t));
}

describe('links between the README and docs/', () => {
  it('are found at all', () => {
    expect(links(readFileSync(join(ROOT, 'README.md'), 'utf8')).length).toBeGreaterThan(10);
  });

  it.each(pages)('%s: every relative link leads to a file and a heading', (page) => {
    const broken: string[] = [];
    const markdown = readFileSync(join(ROOT, page), 'utf8');
    for (const link of links(markdown)) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
      if (!existsSync(target)) {
        broken.push(`${link}: no ${relative(ROOT, target)}`);
        continue;
      }
      if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md') && !anchors(target).has(anchor)) {
        broken.push(`${link}: no heading #${anchor} in ${relative(ROOT, target)}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
