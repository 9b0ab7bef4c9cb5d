#!/usr/bin/env node
/* global console, process, URL */
/**
 * Fails (exit 1) when a type name is declared both in the console (src/console/) and in the
 * server (src/ outside console/): an API answer's shape belongs in the contract (src/contract/),
 * which both sides import, never re-declared by one of them.
 *
 * What counts: every top-level `interface X` and `type X = ...` of every .ts/.tsx file, exported
 * or not (an unexported copy is still a second declaration that can drift). Re-exports
 * (`export type { X } from ...`) and imports are not declarations. Declarations inside
 * functions or namespaces are not looked at. The comparison is by name only: two unrelated
 * shapes that happen to share a name are reported too; rename one of them.
 *
 * Run by `npm run lint`. Uses the TypeScript compiler's parser only (no type checking).
 *
 * No exceptions: every name declared on both sides fails the check.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const src = join(root, 'src');
const consoleDir = join(src, 'console') + sep;

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Top-level interface and type alias names of a file. */
function declaredTypes(path) {
  const text = readFileSync(path, 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const names = [];
  for (const statement of file.statements) {
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) {
      const { line } = file.getLineAndCharacterOfPosition(statement.name.getStart(file));
      names.push({ name: statement.name.text, where: `${relative(root, path)}:${line + 1}` });
    }
  }
  return names;
}

const consoleTypes = new Map();
const serverTypes = new Map();
for (const path of sourceFiles(src)) {
  const into = path.startsWith(consoleDir) ? consoleTypes : serverTypes;
  for (const { name, where } of declaredTypes(path)) {
    if (!into.has(name)) into.set(name, []);
    into.get(name).push(where);
  }
}

const twice = [...consoleTypes.keys()].filter((name) => serverTypes.has(name)).sort();
if (twice.length > 0) {
  console.error('Types declared both in the console and in the server (put the API shape in src/contract/ and import it, or rename one):');
  for (const name of twice) console.error(`  ${name}: ${[...consoleTypes.get(name), ...serverTypes.get(name)].join(', ')}`);
  process.exit(1);
}
