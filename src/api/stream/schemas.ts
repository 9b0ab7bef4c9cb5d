/**
 * JSON schemas of the Stream API request bodies (they validate requests and feed the OpenAPI
 * document). Lengths and enums are the reference's; violations are reported in its words by
 * validation.ts.
 */
import { BASE_TYPES, COLUMN_TYPES, SIGNALS, SOURCE_TYPES } from '../../model/definition.js';

const name = { type: 'string', minLength: 1, maxLength: 40, description: 'Human-readable name.' } as const;
const description = { type: 'string', maxLength: 4096, description: 'Free text.' } as const;
const id = { type: 'string', minLength: 1, maxLength: 48 } as const;
const changeDescription = { type: 'string', maxLength: 4096, description: 'Description of the change, stored in the new version.' } as const;

export const columnSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'name'],
  properties: {
    type: { type: 'string', enum: COLUMN_TYPES },
    name: { type: 'string', minLength: 1, maxLength: 64, description: 'Column name, unique in the mapping.' },
    path: { type: 'string', description: 'type path: dot-separated path in the JSON body, e.g. a.b[0].c' },
    defaultValue: { type: 'string', description: 'type path: value when the path does not exist.' },
    rawString: { type: 'boolean', description: 'path and template: write a JSON string without quotes.' },
    dataType: {
      type: 'string',
      enum: BASE_TYPES,
      description: 'Sluice extension: the column\'s base type; the table column gets the native type and a value that does not convert fails its record. Absent: the untyped string column.',
    },
    primaryKey: { type: 'boolean', description: 'Sluice extension: part of the table\'s primary key; an import then upserts by the key (the last record by event order wins).' },
    template: {
      type: 'object',
      additionalProperties: false,
      required: ['language', 'content'],
      properties: {
        language: { type: 'string', enum: ['jsonnet'] },
        content: { type: 'string', minLength: 1, maxLength: 4096, description: 'Jsonnet code.' },
      },
    },
  },
} as const;

/** A sink's record filter (a Sluice addition): records for which the expression is false are skipped. */
export const filterSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['language', 'content'],
  description: 'Records for which this Jsonnet expression (over the record, as templates see it) is false are skipped; it must return true or false.',
  properties: {
    language: { type: 'string', enum: ['jsonnet'] },
    content: { type: 'string', minLength: 1, maxLength: 4096, description: 'Jsonnet code.' },
  },
} as const;

const mapping = {
  type: 'object',
  additionalProperties: false,
  required: ['columns'],
  properties: { columns: { type: 'array', minItems: 1, maxItems: 100, items: columnSchema }, filter: filterSchema },
} as const;

const allowedSignals = {
  type: 'array',
  items: { type: 'string', enum: SIGNALS },
  description: 'OTLP sources: the signals the sink accepts; empty = all.',
} as const;

export const sourceCreateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type'],
  properties: { sourceId: { ...id, description: 'Optional; generated from the name.' }, name, description, type: { type: 'string', enum: SOURCE_TYPES } },
} as const;

export const sourceUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { name, description, type: { type: 'string', enum: SOURCE_TYPES }, changeDescription },
} as const;

export const sinkCreateSchema = {
  type: 'object',
  additionalProperties: false,
  // `table` is checked after `type` (see sinks route), as the reference reports a bad type first.
  required: ['name', 'type'],
  properties: {
    sinkId: { ...id, description: 'Optional; generated from the name.' },
    name,
    description,
    type: { type: 'string', enum: ['table'] },
    table: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'tableId', 'mapping'],
      properties: { type: { type: 'string', enum: ['keboola'] }, tableId: { type: 'string', minLength: 1, maxLength: 256 }, mapping },
    },
    allowedSignals,
  },
} as const;

export const sinkUpdateSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name,
    description,
    type: { type: 'string', enum: ['table'] },
    table: {
      type: 'object',
      additionalProperties: false,
      properties: { type: { type: 'string', enum: ['keboola'] }, tableId: { type: 'string', minLength: 1, maxLength: 256 }, mapping },
    },
    allowedSignals,
    changeDescription,
  },
} as const;

export const settingsPatchSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    changeDescription,
    settings: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key'],
        properties: { key: { type: 'string' }, value: { description: 'New value; null resets the key to its default.' } },
      },
    },
  },
} as const;

/** POST .../sinks/{sinkId}/replay (replay.ts): the body. */
export const replayBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['since'],
  properties: {
    since: { type: 'string', description: 'First receive time to replay, RFC 3339, e.g. 2026-11-20T00:00:00Z.' },
    records: { type: 'string', enum: ['all', 'failed'], description: '"all" (default): records that failed mapping and records the sink never consumed; "failed": only the former.' },
    fullRemap: { type: 'boolean', description: 'Also write records already in the table again (duplicates rows). Default false.' },
  },
} as const;

/** A loose response schema: documents the shape without filtering the serialised body. */
export function looseObject(descriptionText: string): Record<string, unknown> {
  return { type: 'object', additionalProperties: true, description: descriptionText };
}

export const taskResponse = { 202: looseObject('Task (asynchronous); poll its url until status is not "processing".') };
