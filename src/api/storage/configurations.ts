import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { Config } from '../../config.js';
import type { ComponentJson } from '../../contract/storage-configurations.js';
import { describeComponent } from '../../components/registry.js';
import { parseConfigurationBody } from './configuration-body.js';
import { canReadComponent, canUseConfigurations, canWriteComponent } from '../../storage/configurations/permissions.js';
import { validateComponentId, type ConfigurationService } from '../../storage/configurations/service.js';
import { StorageValidationError, accessDenied } from './envelope.js';
import { requireToken } from '../auth.js';
import { errorResponses, pathParams } from './schemas.js';
import {
  componentSchema, configurationJson, configurationSchema, rowJson, rowSchema, versionJson, versionSchema,
} from './configuration-format.js';

const TAGS = ['storage configurations'];
const configValidation = { validationCode: 'storage.components.validation' };
const rowValidation = { validationCode: 'storage.componentsRows.validation' };

interface ComponentParams { componentId: string; branchId?: string }
interface ConfigParams extends ComponentParams { configId: string }
interface VersionParams extends ConfigParams { version: string }
interface RowParams extends ConfigParams { rowId: string }

const str = { type: 'string' } as const;
/** Query strings stay strings ("true"/"1"); the handlers interpret them. */
const listQuery = { type: 'object', properties: { isDeleted: str, include: str, componentType: str } } as const;
const noContent = { 204: { type: 'null', description: 'Deleted' }, ...errorResponses } as const;

/** "true"/"1" as the PHP API reads boolean query parameters. */
const queryFlag = (v: string | undefined): boolean => v === 'true' || v === '1';

function includes(raw: string | undefined): Set<string> {
  return new Set((raw ?? '').split(',').map((s) => s.trim()).filter(Boolean));
}

export interface ConfigurationRoutesOptions {
  configurations: ConfigurationService;
  project: Pick<Project, 'resolveBranch'>;
  config: Pick<Config, 'maxJsonDepth'>;
}

/**
 * Component configurations and rows, registered twice by the Storage plugin:
 * under /v2/storage and under /v2/storage/branch/{branchId} (only the default branch exists).
 * Every check of the token runs before the body is looked at, so a token without permission
 * gets 403 whatever it sends, and nothing changes.
 */
export const configurationRoutes: FastifyPluginAsync<ConfigurationRoutesOptions> = async (app, { configurations: configs, project, config }) => {
  const parseBody = (body: unknown, validationCode: string) => parseConfigurationBody(body, validationCode, config.maxJsonDepth);
  // Path parameters as each path has them (branchId only under /branch/{branchId}).
  const listParams = pathParams(app.prefix);
  const componentParams = pathParams(app.prefix, 'componentId');
  const configParams = pathParams(app.prefix, 'componentId', 'configId');
  const versionParams = pathParams(app.prefix, 'componentId', 'configId', 'version');
  const rowParams = pathParams(app.prefix, 'componentId', 'configId', 'rowId');

  app.addHook('onRequest', async (req: FastifyRequest) => {
    const { branchId, componentId } = req.params as ComponentParams;
    if (branchId !== undefined) project.resolveBranch(branchId);
    const token = requireToken(req);
    if (componentId === undefined) {
      if (!canUseConfigurations(token)) throw accessDenied();
      return;
    }
    const write = req.method !== 'GET' && req.method !== 'HEAD';
    if (!(write ? canWriteComponent(token, componentId) : canReadComponent(token, componentId))) throw accessDenied();
  });

  app.get<{ Params: ComponentParams; Querystring: { isDeleted?: string; include?: string; componentType?: string } }>('/components', {
    schema: {
      tags: TAGS,
      summary: 'List components with their configurations',
      description: 'include=configuration,rows,state adds those parts to each configuration.',
      params: listParams,
      querystring: listQuery,
      response: { 200: { type: 'array', items: componentSchema }, ...errorResponses },
    },
  }, async (req) => {
    const token = requireToken(req);
    const include = includes(req.query.include);
    const isDeleted = queryFlag(req.query.isDeleted);
    return configs.componentIds(isDeleted)
      .filter((id) => canReadComponent(token, id))
      .map((id) => ({ id, ...describeComponent(id), description: '' }))
      .filter((c) => !req.query.componentType || c.type === req.query.componentType)
      .map((c): ComponentJson => ({
        ...c,
        configurations: configs.list(c.id, isDeleted).map((config) => configurationJson(config, {
          configuration: include.has('configuration'),
          rows: include.has('rows'),
          state: include.has('state'),
        })),
      }));
  });

  app.get<{ Params: ComponentParams; Querystring: { isDeleted?: string } }>('/components/:componentId/configs', {
    schema: {
      tags: TAGS,
      summary: 'List the configurations of a component (with rows)',
      params: componentParams,
      querystring: listQuery,
      response: { 200: { type: 'array', items: configurationSchema }, ...errorResponses },
    },
  }, async (req) => {
    validateComponentId(req.params.componentId);
    return configs.list(req.params.componentId, queryFlag(req.query.isDeleted)).map((c) => configurationJson(c));
  });

  app.post<{ Params: ComponentParams }>('/components/:componentId/configs', {
    config: configValidation,
    schema: {
      tags: TAGS,
      summary: 'Create a configuration',
      description: 'JSON body, or form-urlencoded with `configuration` (and `state`) as JSON strings. ' +
        'Fields: name (required), configurationId, description, configuration, state, changeDescription, isDisabled.',
      params: componentParams,
      response: { 201: configurationSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const input = parseBody(req.body, 'storage.components.validation');
    if (input.name === undefined) {
      throw new StorageValidationError('storage.components.validation', [{ key: 'name', message: 'This field is missing.' }]);
    }
    const created = configs.create(req.params.componentId, { ...input, name: input.name }, requireToken(req));
    const { rows: _rows, ...withoutRows } = created;
    return reply.status(201).send(configurationJson(withoutRows));
  });

  app.get<{ Params: ConfigParams }>('/components/:componentId/configs/:configId', {
    schema: { tags: TAGS, summary: 'Configuration detail', params: configParams, response: { 200: configurationSchema, ...errorResponses } },
  }, async (req) => configurationJson(configs.get(req.params.componentId, req.params.configId)));

  app.put<{ Params: ConfigParams }>('/components/:componentId/configs/:configId', {
    config: configValidation,
    schema: {
      tags: TAGS,
      summary: 'Update a configuration',
      description: 'Changes the given fields; a new version only when something changed.',
      params: configParams,
      response: { 200: configurationSchema, ...errorResponses },
    },
  }, async (req) => {
    const input = parseBody(req.body, 'storage.components.validation');
    return configurationJson(configs.update(req.params.componentId, req.params.configId, input, requireToken(req)));
  });

  app.put<{ Params: ConfigParams }>('/components/:componentId/configs/:configId/state', {
    config: configValidation,
    schema: { tags: TAGS, summary: 'Replace the state of a configuration', params: configParams, response: { 200: configurationSchema, ...errorResponses } },
  }, async (req) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const unexpected = Object.keys(body).filter((k) => k !== 'state');
    if (unexpected.length > 0) {
      throw new StorageValidationError('storage.components.validation', unexpected.map((key) => ({ key, message: 'This field was not expected.' })));
    }
    const { state } = parseBody({ state: body.state ?? {} }, 'storage.components.validation');
    return configurationJson(configs.updateState(req.params.componentId, req.params.configId, state ?? {}));
  });

  app.delete<{ Params: ConfigParams }>('/components/:componentId/configs/:configId', {
    schema: {
      tags: TAGS,
      summary: 'Delete a configuration',
      description: 'Soft delete (restorable); deleting a deleted configuration purges it.',
      params: configParams,
      response: noContent,
    },
  }, async (req, reply) => {
    configs.delete(req.params.componentId, req.params.configId, requireToken(req));
    return reply.status(204).send();
  });

  app.post<{ Params: ConfigParams }>('/components/:componentId/configs/:configId/restore', {
    schema: { tags: TAGS, summary: 'Restore a deleted configuration', params: configParams, response: { 200: configurationSchema, ...errorResponses } },
  }, async (req) => configurationJson(configs.restore(req.params.componentId, req.params.configId, requireToken(req))));

  app.get<{ Params: ConfigParams; Querystring: { include?: string; limit?: string; offset?: string } }>(
    '/components/:componentId/configs/:configId/versions', {
      schema: {
        tags: TAGS,
        summary: 'List versions, newest first',
        params: configParams,
        querystring: { type: 'object', properties: { include: str, limit: str, offset: str } },
        response: { 200: { type: 'array', items: versionSchema }, ...errorResponses },
      },
    }, async (req) => {
      const limit = paging(req.query.limit, 100, 'limit');
      const offset = paging(req.query.offset, 0, 'offset');
      const withContent = includes(req.query.include).has('configuration');
      return configs.versions(req.params.componentId, req.params.configId)
        .slice(offset, offset + limit)
        .map((v) => versionJson(v, withContent));
    });

  app.get<{ Params: VersionParams }>('/components/:componentId/configs/:configId/versions/:version', {
    schema: { tags: TAGS, summary: 'Version detail', params: versionParams, response: { 200: versionSchema, ...errorResponses } },
  }, async (req) => versionJson(configs.version(req.params.componentId, req.params.configId, req.params.version), true));

  app.post<{ Params: VersionParams }>('/components/:componentId/configs/:configId/versions/:version/rollback', {
    schema: {
      tags: TAGS,
      summary: 'Roll back to a version',
      description: 'Creates a new version with the content and rows of the given one; answers its number, as the reference: {"version": n}.',
      params: versionParams,
      response: { 201: { type: 'object', properties: { version: { type: 'integer' } } }, ...errorResponses },
    },
  }, async (req, reply) => {
    const { changeDescription } = parseBody(req.body, 'storage.components.validation');
    const config = configs.rollback(req.params.componentId, req.params.configId, req.params.version, requireToken(req), changeDescription);
    return reply.status(201).send({ version: config.current.version });
  });

  app.post<{ Params: VersionParams }>('/components/:componentId/configs/:configId/versions/:version/create', {
    config: configValidation,
    schema: {
      tags: TAGS,
      summary: 'Copy a version to a new configuration',
      description: 'Optional fields: name (default: the version\'s), description, changeDescription. Answers the new configuration\'s id, as the reference: {"id": "..."}.',
      params: versionParams,
      response: { 201: { type: 'object', properties: { id: { type: 'string' } } }, ...errorResponses },
    },
  }, async (req, reply) => {
    const { name, description, changeDescription } = parseBody(req.body, 'storage.components.validation');
    const copy = configs.copyVersion(req.params.componentId, req.params.configId, req.params.version,
      { name, description, changeDescription }, requireToken(req));
    return reply.status(201).send({ id: copy.id });
  });

  app.get<{ Params: ConfigParams }>('/components/:componentId/configs/:configId/rows', {
    schema: { tags: TAGS, summary: 'List rows', params: configParams, response: { 200: { type: 'array', items: rowSchema }, ...errorResponses } },
  }, async (req) => configs.listRows(req.params.componentId, req.params.configId).map(rowJson));

  app.post<{ Params: ConfigParams }>('/components/:componentId/configs/:configId/rows', {
    config: rowValidation,
    schema: {
      tags: TAGS,
      summary: 'Create a row',
      description: 'Fields: rowId, name, description, configuration (JSON string in forms), state, isDisabled, changeDescription.',
      params: configParams,
      response: { 201: rowSchema, ...errorResponses },
    },
  }, async (req, reply) => {
    const input = parseBody(req.body, 'storage.componentsRows.validation');
    const { row } = configs.createRow(req.params.componentId, req.params.configId, input, requireToken(req));
    return reply.status(201).send(rowJson(row));
  });

  app.get<{ Params: RowParams }>('/components/:componentId/configs/:configId/rows/:rowId', {
    schema: { tags: TAGS, summary: 'Row detail', params: rowParams, response: { 200: rowSchema, ...errorResponses } },
  }, async (req) => rowJson(configs.getRow(req.params.componentId, req.params.configId, req.params.rowId)));

  app.put<{ Params: RowParams }>('/components/:componentId/configs/:configId/rows/:rowId', {
    config: rowValidation,
    schema: { tags: TAGS, summary: 'Update a row', params: rowParams, response: { 200: rowSchema, ...errorResponses } },
  }, async (req) => {
    const input = parseBody(req.body, 'storage.componentsRows.validation');
    return rowJson(configs.updateRow(req.params.componentId, req.params.configId, req.params.rowId, input, requireToken(req)));
  });

  app.put<{ Params: RowParams }>('/components/:componentId/configs/:configId/rows/:rowId/state', {
    config: rowValidation,
    schema: { tags: TAGS, summary: 'Replace the state of a row', params: rowParams, response: { 200: rowSchema, ...errorResponses } },
  }, async (req) => {
    const { state } = parseBody({ state: (req.body as Record<string, unknown> | undefined)?.state ?? {} }, 'storage.componentsRows.validation');
    return rowJson(configs.updateRowState(req.params.componentId, req.params.configId, req.params.rowId, state ?? {}));
  });

  app.delete<{ Params: RowParams }>('/components/:componentId/configs/:configId/rows/:rowId', {
    schema: { tags: TAGS, summary: 'Delete a row (permanently)', params: rowParams, response: noContent },
  }, async (req, reply) => {
    configs.deleteRow(req.params.componentId, req.params.configId, req.params.rowId, requireToken(req));
    return reply.status(204).send();
  });
};

/** A non-negative integer query parameter, or its default. */
function paging(raw: string | undefined, fallback: number, key: string): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    throw new StorageValidationError('storage.validation', [{ key, message: 'This value should be a non-negative integer.' }]);
  }
  return n;
}
