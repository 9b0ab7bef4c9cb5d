import type { FastifyPluginAsync } from 'fastify';
import { stringify } from 'csv-stringify/sync';
import type { Config } from '../../config.js';
import type { Bucket, TableService } from '../../storage/tables.js';
import { parseBucketId, parseTableId } from '../../storage/tables.js';
import { requireToken } from '../auth.js';
import { StorageValidationError } from './envelope.js';
import { requireBucketRead } from './auth.js';
import { bucketPermission } from '../../storage/token-scopes.js';
import { bucketJson, tableJson } from './format.js';
import { bucketSchema, errorResponses, tableSchema } from './schemas.js';

const BUCKETS = ['storage buckets'];
const TABLES = ['storage tables'];
const PREVIEW_DEFAULT = 100;
const PREVIEW_MAX = 1000;
/** `include` values a table listing accepts; only "columns" changes the answer. */
const INCLUDES = new Set(['columns', 'buckets', 'metadata']);

const bucketParams = { type: 'object', required: ['bucketId'], properties: { bucketId: { type: 'string' } } } as const;
const tableParams = { type: 'object', required: ['tableId'], properties: { tableId: { type: 'string' } } } as const;
// Query strings stay open (unknown parameters are ignored, as clients send extras); the
// known ones are checked.
const includeQuery = {
  type: 'object',
  properties: { include: { type: 'string', description: 'Comma-separated: "columns" adds the column list.' } },
} as const;
const previewQuery = {
  type: 'object',
  properties: {
    limit: { type: 'string', pattern: '^[0-9]+$', description: `Rows to return, ${PREVIEW_DEFAULT} by default, at most ${PREVIEW_MAX}.` },
  },
} as const;

export interface TableRoutesOptions {
  tables: TableService;
  config: Pick<Config, 'publicApiUrl'>;
}

/**
 * Buckets and tables, read-only. Scoped tokens see only the buckets they hold a permission
 * on; the master token and canManageBuckets tokens see all. The order of checks is: id syntax
 * (400), permission (403), existence (404), so a scoped token learns nothing about buckets it
 * cannot read.
 */
export const tableRoutes: FastifyPluginAsync<TableRoutesOptions> = async (app, { tables, config }) => {

  app.get('/buckets', {
    config: { validationCode: 'storage.buckets.validation' },
    schema: { tags: BUCKETS, summary: 'List buckets', response: { 200: { type: 'array', items: bucketSchema }, ...errorResponses } },
  }, async (req) => {
    const token = requireToken(req);
    const buckets = (await tables.listBuckets()).filter((b) => bucketPermission(token, b.id) !== undefined);
    return buckets.map((b) => bucketJson(config, b));
  });

  app.get<{ Params: { bucketId: string } }>('/buckets/:bucketId', {
    config: { validationCode: 'storage.buckets.validation' },
    schema: { tags: BUCKETS, summary: 'Bucket detail', params: bucketParams, response: { 200: bucketSchema, ...errorResponses } },
  }, async (req) => {
    const { bucketId } = req.params;
    parseBucketId(bucketId);
    requireBucketRead(requireToken(req), bucketId);
    return bucketJson(config, await tables.getBucket(bucketId));
  });

  app.get<{ Params: { bucketId: string }; Querystring: { include?: string } }>('/buckets/:bucketId/tables', {
    config: { validationCode: 'storage.tables.validation' },
    schema: {
      tags: TABLES,
      summary: 'List the tables of a bucket',
      params: bucketParams,
      querystring: includeQuery,
      response: { 200: { type: 'array', items: tableSchema }, ...errorResponses },
    },
  }, async (req) => {
    const { bucketId } = req.params;
    const withColumns = includes(req.query.include).has('columns');
    parseBucketId(bucketId);
    requireBucketRead(requireToken(req), bucketId);
    const bucket = await tables.getBucket(bucketId);
    return (await tables.listTables(bucketId)).map((t) => tableJson(config, t, bucket, withColumns));
  });

  app.get<{ Querystring: { include?: string } }>('/tables', {
    config: { validationCode: 'storage.tables.validation' },
    schema: {
      tags: TABLES,
      summary: 'List tables',
      querystring: includeQuery,
      response: { 200: { type: 'array', items: tableSchema }, ...errorResponses },
    },
  }, async (req) => {
    const token = requireToken(req);
    const withColumns = includes(req.query.include).has('columns');
    const buckets = new Map<string, Bucket>((await tables.listBuckets()).map((b) => [b.id, b]));
    return (await tables.listTables())
      .filter((t) => bucketPermission(token, t.bucketId) !== undefined && buckets.has(t.bucketId))
      .map((t) => tableJson(config, t, buckets.get(t.bucketId) as Bucket, withColumns));
  });

  app.get<{ Params: { tableId: string } }>('/tables/:tableId', {
    config: { validationCode: 'storage.tables.validation' },
    schema: { tags: TABLES, summary: 'Table detail', params: tableParams, response: { 200: tableSchema, ...errorResponses } },
  }, async (req) => {
    const ref = parseTableId(req.params.tableId);
    requireBucketRead(requireToken(req), ref.bucket.id);
    const table = await tables.getTable(ref.id);
    return tableJson(config, table, await tables.getBucket(ref.bucket.id));
  });

  app.get<{ Params: { tableId: string }; Querystring: { limit?: string } }>('/tables/:tableId/data-preview', {
    config: { validationCode: 'storage.tables.validation' },
    schema: {
      tags: TABLES,
      summary: 'Preview table rows as CSV',
      description: 'CSV with a header row; every value is double-quoted.',
      params: tableParams,
      querystring: previewQuery,
      response: {
        200: { description: 'CSV', content: { 'text/csv': { schema: { type: 'string' } } } },
        ...errorResponses,
      },
    },
  }, async (req, reply) => {
    const limit = req.query.limit === undefined ? PREVIEW_DEFAULT : Number(req.query.limit);
    if (limit < 1 || limit > PREVIEW_MAX) {
      throw new StorageValidationError('storage.tables.validation', [
        { key: 'limit', message: `This value should be between 1 and ${PREVIEW_MAX}.` },
      ]);
    }
    const ref = parseTableId(req.params.tableId);
    requireBucketRead(requireToken(req), ref.bucket.id);
    const { columns, rows } = await tables.preview(ref.id, limit);
    const csv = stringify(rows, { header: true, columns, quoted: true, quoted_empty: true, record_delimiter: 'unix' });
    return reply.type('text/csv; charset=utf-8').send(csv);
  });
};

/** Parses `include=a,b`; unknown values are a 400 rather than silently ignored. */
function includes(raw: string | undefined): Set<string> {
  const values = (raw ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = values.filter((v) => !INCLUDES.has(v));
  if (unknown.length > 0) {
    throw new StorageValidationError('storage.tables.validation', [
      { key: 'include', message: `Unknown value "${unknown[0]}"; allowed: ${[...INCLUDES].join(', ')}.` },
    ]);
  }
  return new Set(values);
}
