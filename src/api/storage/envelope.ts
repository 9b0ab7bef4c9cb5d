import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiError, fromDomainError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Error code for schema validation failures of this route, e.g. "storage.tokens.validation". */
    validationCode?: string;
  }
}

/** Storage API error body (reference: configurations-variables-jobs.md 2.5). */
interface StorageErrorBody {
  error: string;
  code: string;
  status: 'error';
  exceptionId?: string;
  errors?: { key: string; message: string }[];
}

/** A Storage error with the optional per-field list Keboola adds to validation errors. */
export class StorageValidationError extends ApiError {
  constructor(code: string, readonly errors: { key: string; message: string }[]) {
    super(400, code, `Invalid parameters - ${errors.map((e) => `${e.key}: ${e.message}`).join(', ')}`);
  }
}

export const accessDenied = (): ApiError => new ApiError(403, 'accessDenied', "You don't have access to the resource.");
export const tokenInvalid = (): ApiError => new ApiError(401, 'storage.tokenInvalid', 'Invalid access token');

/** Renders any error as {error, code, status: "error"} (plus exceptionId for 5xx). */
export function renderStorageError(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiErr = toApiError(err, req);
  const body: StorageErrorBody = { error: apiErr.message, code: apiErr.code, status: 'error' };
  if (apiErr instanceof StorageValidationError) body.errors = apiErr.errors;
  if (apiErr.statusCode >= 500) {
    const exceptionId = `sluice-storage-${req.id}-${randomBytes(4).toString('hex')}`;
    req.log.error({ err, exceptionId }, 'request failed');
    body.exceptionId = exceptionId;
    if (!(err instanceof ApiError) && !fromDomainError(err)) {
      body.error = `Application error. Please contact our support with exception id (${exceptionId}) attached.`;
    }
  }
  return reply.status(apiErr.statusCode).type('application/json').send(body);
}

export function storageNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0];
  return renderStorageError(new ApiError(404, 'notFound', `Endpoint "${path}" not found.`), req, reply);
}

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, any>;
  message?: string;
}

function toApiError(err: unknown, req: FastifyRequest): ApiError {
  const domain = fromDomainError(err);
  if (domain) return domain;
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError;
  if (fe && Array.isArray(fe.validation)) {
    const code = req.routeOptions.config?.validationCode ?? 'storage.validation';
    const context = fe.validationContext ?? 'body';
    return new StorageValidationError(code, (fe.validation as unknown as AjvError[]).map((e) => describe(e, context)));
  }
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new ApiError(415, 'storage.unsupportedMediaType',
      `Unsupported content type "${req.headers['content-type'] ?? ''}". Send application/json or application/x-www-form-urlencoded.`);
  }
  if (fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new ApiError(400, 'storage.validation', 'Request body is empty, JSON expected.');
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ApiError(413, 'storage.requestTooLarge', 'Request body is too large.');
  if (fe?.statusCode === 400 && (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError)) {
    return new ApiError(400, 'storage.validation', `Invalid JSON body: ${fe.message}`);
  }
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new ApiError(fe.statusCode, 'storage.badRequest', fe.message);
  return new ApiError(500, 'storage.internalError', 'Internal error.');
}

/** One ajv failure as Keboola's {key, message}, e.g. {key: "canManageBuckets", message: "This value should be of type boolean."} */
function describe(e: AjvError, context: string): { key: string; message: string } {
  // The whole body (or query) is named by its context: "body: This value should be of type object."
  const field = e.instancePath.split('/').slice(1).join('.');
  const path = field || context;
  const join = (child: string) => (field === '' ? child : `${field}.${child}`);
  switch (e.keyword) {
    case 'required':
      return { key: join(String(e.params.missingProperty)), message: 'This field is missing.' };
    case 'additionalProperties':
      return { key: join(String(e.params.additionalProperty)), message: 'This field was not expected.' };
    case 'type':
      return { key: path, message: `This value should be of type ${e.params.type}.` };
    case 'enum':
      return { key: path, message: `This value should be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}.` };
    default:
      return { key: path, message: `This value ${e.message ?? 'is invalid'}.` };
  }
}
