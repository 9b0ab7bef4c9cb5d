import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../../http/errors.js';
import { renderError, type ErrorFormatter } from '../../http/error-handler.js';

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

/** The Storage API envelope {error, code, status: "error"[, errors][, exceptionId]}. */
export const storageErrors: ErrorFormatter = {
  logMessage: 'request failed',
  refused({ type, statusCode, error }, req) {
    switch (type) {
      case 'validation': {
        const code = req.routeOptions.config?.validationCode ?? 'storage.validation';
        const context = error.validationContext ?? 'body';
        return new StorageValidationError(code, (error.validation as unknown as AjvError[]).map((e) => describe(e, context)));
      }
      case 'mediaType':
        return new ApiError(415, 'storage.unsupportedMediaType',
          `Unsupported content type "${req.headers['content-type'] ?? ''}". Send application/json or application/x-www-form-urlencoded.`);
      case 'emptyJson': return new ApiError(400, 'storage.validation', 'Request body is empty, JSON expected.');
      case 'tooLarge': return new ApiError(413, 'storage.requestTooLarge', 'Request body is too large.');
      case 'invalidJson': return new ApiError(400, 'storage.validation', `Invalid JSON body: ${error.message}`);
      default: return new ApiError(statusCode, 'storage.badRequest', error.message);
    }
  },
  internal: { code: 'storage.internalError', message: 'Internal error.' },
  exceptionId: { make: (req) => `sluice-storage-${req.id}-${randomBytes(4).toString('hex')}` },
  applicationError: true,
  write(f, _req, reply) {
    const body: StorageErrorBody = { error: f.message, code: f.code, status: 'error' };
    if (f.error instanceof StorageValidationError) body.errors = f.error.errors;
    if (f.exceptionId !== undefined) body.exceptionId = f.exceptionId;
    return reply.status(f.statusCode).type('application/json').send(body);
  },
};

export function storageNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0];
  return renderError(storageErrors, new ApiError(404, 'notFound', `Endpoint "${path}" not found.`), req, reply);
}

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, any>;
  message?: string;
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
