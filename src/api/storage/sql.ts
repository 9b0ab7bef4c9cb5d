import type { FastifyPluginAsync } from 'fastify';
import type { SqlService } from '../../storage/sql.js';
import { requireToken } from '../auth.js';
import { bucketPermission } from '../../storage/token-scopes.js';
import { errorResponses } from './schemas.js';

const sqlBody = {
  type: 'object',
  required: ['query'],
  additionalProperties: false,
  properties: {
    query: { type: 'string', description: 'One statement that reads: SELECT, WITH ... SELECT, VALUES, TABLE. Tables are "<bucket id>"."<table name>".' },
    limit: { type: 'integer', minimum: 1, description: 'Rows at most (default and bound: the server\'s --sql-max-rows).' },
    timeout: { type: 'number', exclusiveMinimum: 0, description: 'Seconds at most (default and bound: the server\'s --sql-timeout).' },
  },
} as const;

const answerSchema = {
  type: 'object',
  properties: {
    columns: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, type: { type: 'string' } } } },
    rows: { type: 'array', items: { type: 'array', items: {} } },
    rowsCount: { type: 'integer' },
    truncated: { type: 'boolean', description: 'More rows than the limit were there.' },
    durationMs: { type: 'integer' },
  },
} as const;

export interface SqlRoutesOptions {
  sql: Pick<SqlService, 'run'>;
}

/**
 * `POST /v2/storage/sql` (a Sluice addition for the CLI and the console): a read-only query on
 * the tables. PostgreSQL runs it in a read-only transaction as a role that may only read the
 * buckets' tables, DuckDB on a read connection; a statement that writes is refused (400) before
 * it runs, one that reads a bucket the token cannot read is refused (403) before it runs.
 */
export const sqlRoutes: FastifyPluginAsync<SqlRoutesOptions> = async (app, { sql }) => {
  app.post<{ Body: { query: string; limit?: number; timeout?: number } }>('/sql', {
    config: { validationCode: 'storage.sql.invalid' },
    schema: {
      tags: ['storage sql'],
      summary: 'Run a read-only SQL query on the tables',
      body: sqlBody,
      response: { 200: answerSchema, ...errorResponses },
    },
  }, async (req) => {
    const token = requireToken(req);
    return sql.run({
      query: req.body.query,
      limit: req.body.limit,
      timeoutSeconds: req.body.timeout,
      canRead: (bucketId) => bucketPermission(token, bucketId) !== undefined,
    });
  });
};
