// Brings the OpenAPI fields (tags, summary, hide) into FastifySchema for every route module.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import { VERSION } from '../version.js';
import { SLUICE_ICON } from './icon.js';

export interface DocumentationOptions {
  /** The server the document names. */
  config: Pick<Config, 'publicApiUrl'>;
}

/**
 * OpenAPI document generated from the route schemas, served at
 * /v1/documentation/openapi.json (and .yaml), with a browsable UI at /v1/documentation.
 * Registered before the route plugins so that their schemas are collected.
 */
const plugin: FastifyPluginAsync<DocumentationOptions> = async (app, { config }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Sluice',
        description: 'Stream management API (/v1) and the Storage API subset (/v2/storage). Authenticate with the X-StorageApi-Token header. Back to the [web console](/console/).',
        version: VERSION,
      },
      servers: [{ url: config.publicApiUrl }],
      components: {
        securitySchemes: { storageApiToken: { type: 'apiKey', in: 'header', name: 'X-StorageApi-Token' } },
      },
      security: [{ storageApiToken: [] }],
    },
    transformObject: (document) =>
      'openapiObject' in document ? openApi30Bounds(document.openapiObject) as typeof document.openapiObject : document.swaggerObject,
  });
  await app.register(swaggerUi, {
    routePrefix: '/v1/documentation',
    staticCSP: true,
    // Swagger UI sets inline styles, and the page is served over plain HTTP too: without these
    // changes every load logged a CSP violation (and asked the browser to upgrade to https).
    transformStaticCSP: (header) => header
      .replace("style-src 'self' https:", "style-src 'self' 'unsafe-inline'")
      .replace(' validator.swagger.io', '')
      .replace(' upgrade-insecure-requests;', ''),
    theme: {
      title: `Sluice ${VERSION} API`,
      favicon: [{ filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: SLUICE_ICON }],
    },
    logo: { type: 'image/svg+xml', content: SLUICE_ICON },
  });
  app.get('/v1/documentation/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/v1/documentation/openapi.yaml', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );
};

export const documentation = fp(plugin, { name: 'documentation' });

/**
 * The route schemas are JSON Schema draft-07, as Ajv validates them: there exclusiveMinimum and
 * exclusiveMaximum are numbers. OpenAPI 3.0 has them as booleans beside minimum and maximum, so
 * the document (a copy; the routes' schemas stay as they are) gets them in that form.
 */
function openApi30Bounds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(openApi30Bounds);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = openApi30Bounds(item);
  // A stricter inclusive bound beside it makes the exclusive one redundant.
  for (const [exclusive, inclusive, tighter] of [
    ['exclusiveMinimum', 'minimum', (a: number, b: number) => a > b],
    ['exclusiveMaximum', 'maximum', (a: number, b: number) => a < b],
  ] as const) {
    const bound = out[exclusive];
    if (typeof bound !== 'number') continue;
    const other = out[inclusive];
    if (typeof other === 'number' && tighter(other, bound)) delete out[exclusive];
    else {
      out[inclusive] = bound;
      out[exclusive] = true;
    }
  }
  return out;
}
