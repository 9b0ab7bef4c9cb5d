import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { StorageFileJson, StorageJobJson } from '../../contract/storage-jobs.js';
import type { ExportService } from '../../storage/exports.js';
import type { ExportOptionsInput } from '../../storage/export-options.js';
import type { StorageJob, StorageJobs } from '../../storage/storage-jobs.js';
import type { FileService, StoredFile } from '../../storage/files.js';
import { parseTableId } from '../../storage/tables.js';
import { requireToken } from '../auth.js';
import { ApiError } from '../../http/errors.js';
import { requireBucketRead } from './auth.js';
import { storageDate } from './format.js';
import { errorResponses } from './schemas.js';

const TAGS = ['storage exports'];
const str = { type: 'string' } as const;
const freeObject = { type: 'object', additionalProperties: true } as const;
const nullableDate = { type: ['string', 'null'] } as const;

export const jobSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    status: { type: 'string', enum: ['waiting', 'processing', 'success', 'error'] },
    url: str,
    tableId: str,
    operationName: str,
    operationParams: freeObject,
    createdTime: str,
    startTime: nullableDate,
    endTime: nullableDate,
    runId: { type: ['string', 'null'] },
    results: { type: ['object', 'null'], additionalProperties: true },
    creatorToken: { type: 'object', properties: { id: str, description: str } },
    metrics: freeObject,
    progress: {
      type: 'object',
      description: 'Sluice: rows written so far, and in all once known.',
      properties: { rows: { type: 'integer' }, totalRows: { type: ['integer', 'null'] } },
    },
    error: { type: 'object', properties: { code: str, message: str } },
  },
} as const;

export const fileSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    created: str,
    isPublic: { type: 'boolean' },
    isSliced: { type: 'boolean' },
    isEncrypted: { type: 'boolean' },
    name: str,
    url: { type: 'string', description: 'Signed download URL of the node holding the file, valid for an hour; no token needed.' },
    provider: str,
    region: str,
    sizeBytes: { type: 'integer' },
    contentType: str,
    tags: { type: 'array', items: str },
    maxAgeDays: { type: 'integer' },
    expires: str,
    runId: { type: ['string', 'null'] },
    runIds: { type: 'array', items: str },
    creatorId: { type: 'integer' },
    creatorToken: { type: 'object', properties: { id: str, description: str } },
  },
} as const;

const exportBody = {
  type: 'object',
  description: 'Keboola export options; a form body is accepted too (whereValues[]=a&whereValues[]=b).',
  properties: {
    columns: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'Columns to export, comma-separated or a list (default all; `_timestamp` may be asked for).' },
    whereColumn: str,
    whereOperator: { type: 'string', enum: ['eq', 'ne'] },
    whereValues: { anyOf: [{ type: 'string' }, { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } }] },
    changedSince: { anyOf: [{ type: 'string' }, { type: 'integer' }], description: 'Rows written since: unix seconds, ISO 8601, or relative ("-2 hours").' },
    changedUntil: { anyOf: [{ type: 'string' }, { type: 'integer' }], description: 'Rows written before: as changedSince.' },
    limit: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
    format: { type: 'string', enum: ['rfc', 'parquet'], description: 'rfc: CSV with a header (default); parquet: string columns.' },
    gzip: { anyOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'integer' }], description: 'CSV only; default true.' },
  },
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;

/**
 * The job as the API answers it: the API contract's (src/contract/storage-jobs.ts). The stored
 * job's own fields (`heartbeat`) are spread along but not answered: jobSchema lists what is.
 */
export function jobJson(config: Pick<Config, 'publicApiUrl'>, job: StorageJob): StorageJobJson {
  return {
    ...job,
    id: Number(job.id),
    url: `${config.publicApiUrl}/v2/storage/jobs/${job.id}`,
    createdTime: storageDate(job.createdTime),
    startTime: storageDate(job.startTime),
    endTime: storageDate(job.endTime),
    runId: null,
  };
}

/** What a file's JSON reads: its signed download URL, how long exports are kept. */
export interface FileJsonContext {
  files: Pick<FileService, 'downloadUrl'>;
  config: Pick<Config, 'exportRetentionMs'>;
}

/** The file as the API answers it: the API contract's (src/contract/storage-jobs.ts). */
export function fileJson(ctx: FileJsonContext, file: StoredFile): StorageFileJson {
  return {
    id: Number(file.id),
    created: storageDate(file.created),
    isPublic: false,
    isSliced: false,
    isEncrypted: false,
    name: file.name,
    url: ctx.files.downloadUrl(file),
    provider: 'sluice',
    region: '',
    sizeBytes: file.sizeBytes,
    contentType: file.contentType,
    tags: file.tags,
    maxAgeDays: Math.max(1, Math.ceil(ctx.config.exportRetentionMs / 86_400_000)),
    expires: storageDate(file.expires),
    runId: null,
    runIds: [],
    creatorId: Number(file.creatorToken.id),
    creatorToken: file.creatorToken,
  };
}

/** Form bodies name list fields "whereValues[]"; JSON bodies "whereValues". */
function exportInput(body: Record<string, unknown> | undefined): ExportOptionsInput {
  const b = body ?? {};
  const pick = (name: string) => b[name] ?? b[`${name}[]`];
  return {
    columns: pick('columns'), whereColumn: b.whereColumn, whereOperator: b.whereOperator, whereValues: pick('whereValues'),
    changedSince: b.changedSince, changedUntil: b.changedUntil, limit: b.limit, format: b.format, gzip: b.gzip,
  };
}

export interface ExportRoutesOptions {
  exports: Pick<ExportService, 'start'>;
  storageJobs: Pick<StorageJobs, 'get'>;
  files: Pick<FileService, 'get' | 'downloadUrl'>;
  config: Pick<Config, 'publicApiUrl' | 'exportRetentionMs'>;
}

/**
 * Table exports, Storage jobs and files: `POST tables/{tableId}/export-async` answers a job;
 * `GET jobs/{id}` follows it (with `progress`); its `results.file.id` is read at
 * `GET files/{id}`, whose `url` downloads the file.
 */
export const exportRoutes: FastifyPluginAsync<ExportRoutesOptions> = async (app, opts) => {
  const { exports, storageJobs, files, config } = opts;
  app.post<{ Params: { tableId: string }; Body: Record<string, unknown> | undefined }>('/tables/:tableId/export-async', {
    config: { validationCode: 'storage.tables.validation' },
    schema: {
      tags: TAGS,
      summary: 'Export a table into a file (asynchronous)',
      params: { type: 'object', required: ['tableId'], properties: { tableId: str } },
      body: exportBody,
      response: { 202: jobSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const token = requireToken(req);
    const ref = parseTableId(req.params.tableId);
    requireBucketRead(token, ref.bucket.id);
    const job = await exports.start(ref.id, exportInput(req.body), { id: token.id, description: token.description });
    return reply.status(202).send(jobJson(config, job));
  });

  app.get<{ Params: { id: string } }>('/jobs/:id', {
    schema: { tags: TAGS, summary: 'Storage job detail', params: idParams, response: { 200: jobSchema, ...errorResponses } },
  }, async (req) => {
    const token = requireToken(req);
    const job = storageJobs.get(req.params.id);
    if (!job || !(job.creatorToken.id === token.id || token.isMasterToken || token.canReadAllFileUploads)) {
      throw new ApiError(404, 'storage.jobs.notFound', `Job ${req.params.id} not found`);
    }
    return jobJson(config, job);
  });

  app.get<{ Params: { id: string } }>('/files/:id', {
    schema: { tags: TAGS, summary: 'File detail with a download URL', params: idParams, response: { 200: fileSchema, ...errorResponses } },
  }, async (req) => {
    const token = requireToken(req);
    const file = files.get(req.params.id);
    if (!file || !(file.creatorToken.id === token.id || token.isMasterToken || token.canReadAllFileUploads)) {
      throw new ApiError(404, 'storage.files.notFound', `File ${req.params.id} not found`);
    }
    return fileJson(opts, file);
  });
};
