import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { SourceService } from '../../definition/sources.js';
import type { SinkService } from '../../definition/sinks.js';
import { requireToken } from '../auth.js';
import { settingsView } from '../../pipeline/settings.js';
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
  config: Pick<Config, 'publicApiUrl' | 'uploadMinIntervalMs' | 'importMinIntervalMs'>;
}

/** Settings of sources and sinks: GET lists every key; PATCH changes (null resets) user keys. */
export const settingsRoutes: FastifyPluginAsync<SettingsRoutesOptions> = async (app, { project, sources, sinks, config }) => {
  const api = config.publicApiUrl;
  // The operator's floors, shown on the interval keys when they lengthen a valid value.
  const floors = triggerFloors({ uploadMinIntervalMs: config.uploadMinIntervalMs, importMinIntervalMs: config.importMinIntervalMs, maxSlices: 100 });

  app.get<{ Params: SourceParams }>('/branches/:branchId/sources/:sourceId/settings', {
    schema: { tags, summary: 'Settings of a source (its own overrides applied)', response: { 200: looseObject('SettingsResult') } },
  }, async (req): Promise<SettingsAnswer> => ({ settings: settingsView(sources.get(project.resolveBranch(req.params.branchId), req.params.sourceId).config, floors) }));

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
    return { settings: settingsView(sink.config, floors) };
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
