import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import { requireToken } from '../auth.js';
import { settingsView } from '../../pipeline/settings.js';
import { quotaSettingDefaults } from '../../pipeline/quota-settings.js';
import { parseBool } from './params.js';
import { triggerFloors } from '../../levels/triggers.js';
import { byToken } from './views.js';
import { looseObject, settingsPatchSchema, taskResponse } from './schemas.js';
import type { SettingsAnswer, SettingsPatch } from '../../contract/settings.js';

type SourceParams = { branchId: string; sourceId: string };
type SinkParams = SourceParams & { sinkId: string };

const tags = ['settings'];

export interface SettingsRoutesOptions {
  project: Project;
  sources: SourceService;
  sinks: SinkService;
  config: Pick<Config, 'publicApiUrl' | 'uploadMinIntervalMs' | 'importMinIntervalMs' | 'sourceMaxRecordsPerSecond' | 'sourceMaxBytesPerSecond'>;
}

/**
 * Settings of sources and sinks: GET lists every key; PATCH changes (null resets) user keys.
 * Sluice's own keys (the source's quota) are listed where they matter (set on the source, or a
 * node default) or with `?all=true`: the reference's list stays the reference's otherwise.
 */
export const settingsRoutes: FastifyPluginAsync<SettingsRoutesOptions> = async (app, { project, sources, sinks, config }) => {
  const api = config.publicApiUrl;
  // The operator's floors, shown on the interval keys when they lengthen a valid value.
  const floors = triggerFloors({ uploadMinIntervalMs: config.uploadMinIntervalMs, importMinIntervalMs: config.importMinIntervalMs, maxSlices: 100 });

  // The node's quota defaults (--source-max-records-per-second, --source-max-bytes-per-second), shown as the keys' defaults.
  const defaults = quotaSettingDefaults({ recordsPerSecond: config.sourceMaxRecordsPerSecond, bytesPerSecond: config.sourceMaxBytesPerSecond });

  app.get<{ Params: SourceParams; Querystring: { all?: string } }>('/branches/:branchId/sources/:sourceId/settings', {
    schema: {
      tags,
      summary: 'Settings of a source (its own overrides applied)',
      querystring: { type: 'object', properties: { all: { type: 'string', description: 'true: Sluice\'s own keys too (source.quota.*), also where they are not set' } } },
      response: { 200: looseObject('SettingsResult') },
    },
  }, async (req): Promise<SettingsAnswer> => {
    const source = sources.get(project.resolveBranch(req.params.branchId), req.params.sourceId);
    return { settings: settingsView(source.config, { scope: 'source', floors, defaults, all: parseBool('all', req.query.all) }) };
  });

  app.patch<{ Params: SourceParams; Body: SettingsPatch }>('/branches/:branchId/sources/:sourceId/settings', {
    schema: { tags, summary: 'Change settings of a source (asynchronous task)', body: settingsPatchSchema, response: taskResponse },
  }, async (req, reply) => {
    const body = req.body ?? {};
    const task = sources.patchSettings(project.resolveBranch(req.params.branchId), req.params.sourceId, body.settings ?? [], body.changeDescription, byToken(requireToken(req)), api, floors);
    return reply.status(202).send(task);
  });

  app.get<{ Params: SinkParams }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/settings', {
    schema: { tags, summary: 'Settings of a sink (its own overrides applied)', response: { 200: looseObject('SettingsResult') } },
  }, async (req): Promise<SettingsAnswer> => {
    const sink = sinks.get(project.resolveBranch(req.params.branchId), req.params.sourceId, req.params.sinkId);
    return { settings: settingsView(sink.config, { scope: 'sink', floors }) };
  });

  app.patch<{ Params: SinkParams; Body: SettingsPatch }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/settings', {
    schema: { tags, summary: 'Change settings of a sink (asynchronous task); waiting data is imported at once', body: settingsPatchSchema, response: taskResponse },
  }, async (req, reply) => {
    const body = req.body ?? {};
    const { sourceId, sinkId } = req.params;
    const task = sinks.patchSettings(project.resolveBranch(req.params.branchId), sourceId, sinkId, body.settings ?? [], body.changeDescription, byToken(requireToken(req)), api, floors);
    return reply.status(202).send(task);
  });
};
