import type { FastifyPluginAsync } from 'fastify';
import { isDomainError } from '../../domain-errors.js';
import { SQL_BUSY_CODE, SQL_BUSY_RETRY_AFTER_SECONDS, type SqlService } from '../../storage/sql.js';
import { requireToken } from '../auth.js';
import { bucketPermission } from '../../storage/token-scopes.js';
import { errorResponses } from './schemas.js';
import type { SqlBody } from '../../contract/storage-tables.js';

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
    dialect: { type: 'string', enum: ['DuckDB', 'PostgreSQL'], description: 'The SQL the target speaks.' },
  },
} as const;

export interface SqlRoutesOptions {
  sql: Pick<SqlService, 'run'>;
}

/**
 * `POST /v2/storage/sql` (a Sluice addition for the CLI and the console): a read-only query on
 * the tables. PostgreSQL runs it in a read-only transaction as a role that may only read the
 * buckets it reads, DuckDB on a locked-down connection; a statement that writes is refused (400) before
 * it runs, one that reads a bucket the token cannot read is refused (403) before it runs.
 * When every SQL connection is busy and the queue is full (or stays full for the query's
 * time), 503 `storage.sql.busy` with Retry-After: the node is busy, not the client too eager
 * (429 would say this client sent too much, which no single client may have done).
 */
export const sqlRoutes: FastifyPluginAsync<SqlRoutesOptions> = async (app, { sql }) => {
  app.post<{ Body: SqlBody }>('/sql', {
    config: { validationCode: 'storage.sql.invalid' },
    schema: {
      tags: ['storage sql'],
      summary: 'Run a read-only SQL query on the tables',
      description: 'Bounded by --sql-timeout, --sql-max-rows and --sql-memory-limit; at most --sql-connections queries run at once and --sql-queue-size wait (the wait counts in the timeout). When none is free: 503 storage.sql.busy with Retry-After.',
      body: sqlBody,
      response: { 200: answerSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const token = requireToken(req);
    try {
      return await sql.run({
        query: req.body.query,
        limit: req.body.limit,
        timeoutSeconds: req.body.timeout,
        canRead: (bucketId) => bucketPermission(token, bucketId) !== undefined,
      });
    } catch (err) {
      if (isDomainError(err) && err.code === SQL_BUSY_CODE) reply.header('retry-after', String(SQL_BUSY_RETRY_AFTER_SECONDS));
      throw err;
    }
  });
};
