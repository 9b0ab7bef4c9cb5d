import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';
import { findCaughtUp } from '../../connectors/metadata/store.js';
import { ApiError } from '../errors.js';
import { looseObject } from './schemas.js';

/** GET /v1/tasks/{taskId}: task ids contain slashes, so the route is a wildcard. */
export const taskRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  app.get<{ Params: { '*': string } }>('/tasks/*', {
    schema: { tags: ['tasks'], summary: 'Get a task', response: { 200: looseObject('Task') } },
  }, async (req) => {
    const taskId = decodeURIComponent(req.params['*']);
    // A task another cluster node has just created may not be here yet.
    const task = await findCaughtUp(services.metadata, () => services.tasks.get(taskId));
    if (!task) throw new ApiError(404, 'taskNotFound', `Task "${taskId}" not found.`);
    return task;
  });
};
