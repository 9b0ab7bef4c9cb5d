import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { NewToken, TokenService } from '../../storage/tokens.js';
import { parseBucketId } from '../../storage/tables.js';
import { ApiError } from '../../http/errors.js';
import { requireToken, tokenFromRequest } from '../auth.js';
import { accessDenied } from './envelope.js';
import { requireManageTokens } from './auth.js';
import { tokenJson, type TokenJsonContext } from './format.js';
import { errorResponses, tokenSchema } from './schemas.js';

/** The longest expiry a new token may ask for, in seconds: 100 years. */
const MAX_EXPIRES_IN = 100 * 365.25 * 24 * 3600;

const TAGS = ['storage tokens'];
const config = { validationCode: 'storage.tokens.validation' };

const createBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    description: { type: 'string', maxLength: 1000 },
    bucketPermissions: {
      type: 'object',
      description: 'bucket id -> "read" or "write"',
      additionalProperties: { type: 'string', enum: ['read', 'write'] },
    },
    canManageBuckets: { type: 'boolean' },
    canReadAllFileUploads: { type: 'boolean' },
    componentAccess: { type: 'array', items: { type: 'string', minLength: 1 } },
    // At most 100 years: a larger number is no date a token can carry (it was a 500).
    expiresIn: { type: ['integer', 'null'], minimum: 1, maximum: MAX_EXPIRES_IN, description: 'Seconds until the token expires (at most 100 years); null or absent = never.' },
  },
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;

interface CreateBody {
  description?: string;
  bucketPermissions?: Record<string, 'read' | 'write'>;
  canManageBuckets?: boolean;
  canReadAllFileUploads?: boolean;
  componentAccess?: string[];
  expiresIn?: number | null;
}

export interface TokenRoutesOptions extends TokenJsonContext {
  tokens: TokenService;
}

/** Storage tokens: verify, and (for the master token) create, list, detail and delete. */
export const tokenRoutes: FastifyPluginAsync<TokenRoutesOptions> = async (app, opts) => {
  const { tokens } = opts;
  const manager = async (req: FastifyRequest) => requireManageTokens(requireToken(req));

  app.get('/tokens/verify', {
    schema: { tags: TAGS, summary: 'Verify the token in X-StorageApi-Token', response: { 200: tokenSchema, ...errorResponses } },
  }, async (req) => tokenJson(opts, requireToken(req), tokenFromRequest(req)));

  app.post<{ Body: CreateBody }>('/tokens', {
    config,
    // The permission check runs before the body is parsed: a token that may not create tokens
    // gets 403 whatever it sends. Form bodies are turned into the JSON shape, then validated.
    onRequest: manager,
    preValidation: async (req) => { req.body = fromForm(req) as CreateBody; },
    schema: {
      tags: TAGS,
      summary: 'Create a token',
      description: 'JSON or form body (bucketPermissions[<bucketId>]=read, componentAccess[]=<componentId>).',
      body: createBody,
      response: { 201: tokenSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const spec = toNewToken(req.body);
    const { token, secret } = tokens.create(spec);
    return reply.status(201).send(await tokenJson(opts, token, secret));
  });

  app.get('/tokens', {
    onRequest: manager,
    schema: { tags: TAGS, summary: 'List tokens', response: { 200: { type: 'array', items: tokenSchema }, ...errorResponses } },
  }, async () => Promise.all(tokens.list().map((t) => tokenJson(opts, t))));

  app.get<{ Params: { id: string } }>('/tokens/:id', {
    schema: { tags: TAGS, summary: 'Token detail', params: idParams, response: { 200: tokenSchema, ...errorResponses } },
  }, async (req) => {
    const caller = requireToken(req);
    // A token may always read itself; other tokens only with canManageTokens.
    if (caller.id !== req.params.id && !caller.canManageTokens) throw accessDenied();
    const token = tokens.get(req.params.id);
    if (!token) throw tokenNotFound(req.params.id);
    return tokenJson(opts, token);
  });

  app.delete<{ Params: { id: string } }>('/tokens/:id', {
    onRequest: manager,
    schema: {
      tags: TAGS,
      summary: 'Delete a token',
      params: idParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses },
    },
  }, async (req, reply) => {
    const token = tokens.get(req.params.id);
    if (!token) throw tokenNotFound(req.params.id);
    if (token.isMasterToken) {
      throw new ApiError(400, 'storage.tokens.cannotDeleteMasterToken', 'The master token cannot be deleted.');
    }
    tokens.delete(token.id);
    return reply.status(204).send();
  });
};

function tokenNotFound(id: string): ApiError {
  return new ApiError(404, 'storage.tokens.notFound', `Token "${id}" not found`);
}

function toNewToken(body: CreateBody): NewToken {
  for (const bucketId of Object.keys(body.bucketPermissions ?? {})) {
    try {
      parseBucketId(bucketId);
    } catch (err) {
      throw new ApiError(400, 'storage.tokens.validation', `Invalid parameters - bucketPermissions: ${(err as Error).message}`);
    }
  }
  return {
    description: body.description ?? '',
    canManageBuckets: body.canManageBuckets ?? false,
    canReadAllFileUploads: body.canReadAllFileUploads ?? false,
    bucketPermissions: body.bucketPermissions ?? {},
    ...(body.componentAccess ? { componentAccess: body.componentAccess } : {}),
    expiresIn: body.expiresIn ?? null,
  };
}

const FORM_BOOLEANS = new Set(['canManageBuckets', 'canReadAllFileUploads']);

/**
 * A form body (as the PHP client sends it) in the JSON body's shape:
 * `bucketPermissions[in.c-x]=read` -> {bucketPermissions: {"in.c-x": "read"}},
 * `componentAccess[]=a` -> {componentAccess: ["a"]}, "1"/"true" and "0"/"false" -> booleans,
 * digits in expiresIn -> a number. Anything else is left for the schema to reject.
 */
function fromForm(req: FastifyRequest): unknown {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-www-form-urlencoded') || typeof req.body !== 'object' || req.body === null) {
    return req.body;
  }
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(req.body as Record<string, unknown>)) {
    const values = Array.isArray(raw) ? raw : [raw];
    const permission = /^bucketPermissions\[(.+)\]$/.exec(key);
    if (permission) {
      out.bucketPermissions = { ...(out.bucketPermissions as object | undefined), [permission[1]]: values[values.length - 1] };
    } else if (/^componentAccess(\[\d*\])?$/.test(key)) {
      out.componentAccess = [...((out.componentAccess as unknown[] | undefined) ?? []), ...values];
    } else if (FORM_BOOLEANS.has(key)) {
      out[key] = formBoolean(raw);
    } else if (key === 'expiresIn') {
      out[key] = raw === '' ? null : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
    } else {
      out[key] = raw;
    }
  }
  return out;
}

function formBoolean(v: unknown): unknown {
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false' || v === '') return false;
  return v;
}
