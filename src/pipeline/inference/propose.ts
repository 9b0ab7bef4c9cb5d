/**
 * A sink mapping proposed from sampled bodies: values in, proposal out (no I/O). Feed every
 * sampled body to `add`, then `propose`.
 *
 * The rules (docs/mappings.md, "Proposing a mapping" says them to users):
 * - Fields: the members of a body object, and the members of members that are always objects
 *   (when present and not null), down to `MAX_DEPTH` levels; an object at the last level and an
 *   array are one JSON column. A field whose values are sometimes objects and sometimes not is
 *   one column (of its own type, usually STRING), not its members.
 * - A key that a path cannot address (empty, with "." or "[", or `<digits>]`: path.ts) has no
 *   column; a template column can still read it.
 * - The type: value-kinds.ts baseTypeOf. A column of text values is `rawString`.
 * - Columns: `received_at` (the receive time, `datetime`, TIMESTAMP) first, then the fields in
 *   the order they were first seen, members after their object. A mapping has at most 100
 *   columns: beyond, the fields seen in the most bodies are kept.
 * - At most `MAX_FIELDS` distinct fields are tracked: a body's fields beyond are left out, so a
 *   stream of bodies with ever new keys (ids as keys) cannot grow the work without bound.
 */
import type { BaseType, Column } from '../../model/definition.js';
import type { ProposedField, ValueKind } from '../../contract/mapping-proposal.js';
import { JsonObject, type JsonValue } from '../columns/json.js';
import { ColumnNames, columnNameOf } from './column-names.js';
import { VALUE_KINDS, baseTypeOf, isTextKind, kindOf } from './value-kinds.js';

/** Levels of objects whose members become columns: `a.b.c` is the deepest path. */
export const MAX_DEPTH = 3;
/** Distinct fields tracked (every level counts). */
export const MAX_FIELDS = 1000;
/** The Stream API's largest mapping (api/stream/schemas.ts). */
export const MAX_COLUMNS = 100;
/** The first column of every proposal. */
export const RECEIVED_AT: Column = { type: 'datetime', name: 'received_at', dataType: 'TIMESTAMP' };

interface Field {
  readonly segments: readonly string[];
  readonly depth: number;
  readonly addressable: boolean;
  readonly children: Field[];
  readonly childByKey: Map<string, Field>;
  seen: number;
  readonly kinds: Map<ValueKind, number>;
}

export interface Proposal {
  columns: Column[];
  fields: ProposedField[];
  /** More distinct fields were seen than MAX_FIELDS. */
  fieldsTruncated: boolean;
}

const UNADDRESSABLE_KEY = /[.[]|^\d+\]$/;

function newField(segments: readonly string[], addressable: boolean): Field {
  return { segments, depth: segments.length, addressable, children: [], childByKey: new Map(), seen: 0, kinds: new Map() };
}

/** Collects the fields of sampled bodies. */
export class MappingSampler {
  private readonly root = newField([], true);
  private fieldCount = 0;
  private truncated = false;

  /** Takes one body; false (and nothing taken) when it is not an object. */
  add(body: JsonValue): boolean {
    if (!(body instanceof JsonObject)) return false;
    this.walk(body, this.root);
    return true;
  }

  private walk(object: JsonObject, parent: Field): void {
    const { keys, values } = object;
    for (let i = 0; i < keys.length; i++) {
      const field = this.fieldOf(parent, keys[i]);
      if (field === undefined) continue;
      const value = values[i];
      const kind = kindOf(value);
      field.seen++;
      field.kinds.set(kind, (field.kinds.get(kind) ?? 0) + 1);
      if (kind === 'object' && field.addressable && field.depth < MAX_DEPTH) this.walk(value as JsonObject, field);
    }
  }

  private fieldOf(parent: Field, key: string): Field | undefined {
    let field = parent.childByKey.get(key);
    if (field === undefined) {
      if (this.fieldCount >= MAX_FIELDS) {
        this.truncated = true;
        return undefined;
      }
      field = newField([...parent.segments, key], key !== '' && !UNADDRESSABLE_KEY.test(key));
      parent.childByKey.set(key, field);
      parent.children.push(field);
      this.fieldCount++;
    }
    return field;
  }

  propose(): Proposal {
    const decisions = new Map<Field, Decision>();
    const candidates: Field[] = [];
    for (const field of this.root.children) decide(field, decisions, candidates);

    const kept = new Set(mostSeen(candidates, MAX_COLUMNS - 1));
    const names = new ColumnNames();
    const columns: Column[] = [{ ...RECEIVED_AT, name: names.claim(RECEIVED_AT.name) }];
    const columnOf = new Map<Field, string>();
    for (const field of candidates) {
      const { candidate } = decisions.get(field) as Required<Pick<Decision, 'candidate'>>;
      if (!kept.has(field)) {
        decisions.set(field, { note: `Left out: a mapping has at most ${MAX_COLUMNS} columns, and the fields seen in the most records were kept.` });
        continue;
      }
      const name = names.claim(columnNameOf(field.segments));
      columnOf.set(field, name);
      columns.push({
        type: 'path',
        name,
        path: pathOf(field),
        dataType: candidate.dataType,
        ...(candidate.rawString ? { rawString: true } : {}),
      });
    }

    const fields: ProposedField[] = [];
    const list = (field: Field): void => {
      const decision = decisions.get(field);
      const column = columnOf.get(field);
      fields.push({
        path: pathOf(field),
        seen: field.seen,
        types: typesOf(field),
        ...(column !== undefined ? { column } : {}),
        ...(decision?.note !== undefined ? { note: decision.note } : {}),
      });
      for (const child of field.children) list(child);
    };
    for (const field of this.root.children) list(field);
    return { columns, fields, fieldsTruncated: this.truncated };
  }
}

/** A field's column (its type), or why it has none; a column may have a note too. */
interface Decision {
  candidate?: { dataType: BaseType; rawString: boolean };
  note?: string;
}

/**
 * Whether a field is a column (a candidate, in `candidates` in order) or why not; its members
 * likewise. An object field is expanded into its members when its values are always objects
 * (nulls aside) and it is above the last level; with no member that is a column it is a JSON
 * column itself.
 */
function decide(field: Field, decisions: Map<Field, Decision>, candidates: Field[]): void {
  if (!field.addressable) {
    decisions.set(field, { note: 'A path cannot address this key (it is empty, or has "." or "["): a template column can read it.' });
    return;
  }
  const kinds = new Set(field.kinds.keys());
  kinds.delete('null');
  const expanded = kinds.size === 1 && kinds.has('object') && field.depth < MAX_DEPTH;
  if (expanded) {
    const before = candidates.length;
    for (const child of field.children) decide(child, decisions, candidates);
    if (candidates.length > before) {
      decisions.set(field, { note: 'An object: its members are columns.' });
      return;
    }
  }
  decisions.set(field, {
    candidate: { dataType: baseTypeOf(kinds), rawString: [...kinds].some(isTextKind) },
    ...(kinds.size === 0 ? { note: 'Only null values seen: STRING until values show a type.' } : {}),
  });
  candidates.push(field);
  if (!expanded) {
    for (const child of field.children) inside(child, field, decisions);
  }
}

/** The members of a field that is a column itself: no columns of their own. */
function inside(field: Field, column: Field, decisions: Map<Field, Decision>): void {
  decisions.set(field, { note: `Inside "${pathOf(column)}", which is a column of its own (its values are not always objects).` });
  for (const child of field.children) inside(child, column, decisions);
}

/** The `limit` candidates seen in the most bodies (the earlier first among equals). */
function mostSeen(candidates: readonly Field[], limit: number): Field[] {
  if (candidates.length <= limit) return [...candidates];
  return candidates
    .map((field, order) => ({ field, order }))
    .sort((a, b) => b.field.seen - a.field.seen || a.order - b.order)
    .slice(0, limit)
    .map((c) => c.field);
}

function pathOf(field: Field): string {
  return field.segments.join('.');
}

function typesOf(field: Field): Partial<Record<ValueKind, number>> {
  const types: Partial<Record<ValueKind, number>> = {};
  for (const kind of VALUE_KINDS) {
    const n = field.kinds.get(kind);
    if (n !== undefined) types[kind] = n;
  }
  return types;
}
