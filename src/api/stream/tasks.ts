import type { FastifyPluginAsync } from 'fastify';
import type { TaskRunner } from '../../definition/tasks.js';
import { findCaughtUp, type MetadataStore } from '../../ports/metadata-store.js';
import { ApiError } from '../../http/errors.js';
import { looseObject } from './schemas.js';

export interface TaskRoutesOptions {
  /** A task started on another node is found once this node caught up with the store. */
  metadata: MetadataStore;
  tasks: Pick<TaskRunner, 'get'>;
}

/** GET /v1/tasks/{taskId}: task ids contain slashes, so the route is a wildcard. */
export const taskRoutes: FastifyPluginAsync<TaskRoutesOptions> = async (app, { metadata, tasks }) => {
  app.get<{ Params: { '*': string } }>('/tasks/*', {
    schema: { tags: ['tasks'], summary: 'Get a task', response: { 200: looseObject('Task') } },
  }, async (req) => {
    // The router has decoded the path once (`%2F` is a slash); decoding again would turn `%25`
    // into a percent sign that a second decoding rejects.
    const taskId = req.params['*'];
    // A task another cluster node has just created may not be here yet.
    const task = await findCaughtUp(metadata, () => tasks.get(taskId));
    if (!task) throw new ApiError(404, 'taskNotFound', `Task "${taskId}" not found.`);
    return task;
  });
};
