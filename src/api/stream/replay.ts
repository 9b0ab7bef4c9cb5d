import type { FastifyPluginAsync } from 'fastify';
import type { Project } from '../../storage/project.js';
import type { SinkService } from '../../definition/sinks.js';
import type { StreamRuntime } from '../../actors/stream-runtime.js';
import { lockKey } from '../../definition/sources.js';
import { TaskFailure, type TaskRunner } from '../../definition/tasks.js';
import { ApiError } from '../../http/errors.js';
import { looseObject, replayBodySchema } from './schemas.js';
import { requireToken } from '../auth.js';
import { requireSourceWrite } from './source-scopes.js';
import type { ReplayBody } from '../../contract/failures.js';

type SinkParams = { branchId: string; sourceId: string; sinkId: string };

/** A replay may read a whole topic: it is bounded by the log's retention, not by the 5 minute task timeout. */
const REPLAY_TIMEOUT_MS = 6 * 60 * 60_000;

export interface ReplayRoutesOptions {
  project: Project;
  sinks: SinkService;
  runtime: Pick<StreamRuntime, 'reconcile' | 'replay'>;
  tasks: Pick<TaskRunner, 'start'>;
}

/**
 * POST .../sinks/{sinkId}/replay: re-processes the sink's records from the event log from a point
 * in time, through its current mapping, as a task whose outputs show the progress. Sluice's own
 * endpoint (the reference has none); semantics in src/actors/replay.ts.
 */
export const replayRoutes: FastifyPluginAsync<ReplayRoutesOptions> = async (app, { project, sinks, runtime, tasks }) => {

  app.post<{ Params: SinkParams; Body: ReplayBody }>('/branches/:branchId/sources/:sourceId/sinks/:sinkId/replay', {
    schema: {
      tags: ['sinks'],
      summary: 'Re-process the sink\'s records from the event log since a point in time (a task with progress)',
      body: replayBodySchema,
      response: { 202: looseObject('Task') },
    },
  }, async (req, reply) => {
    const branchId = project.resolveBranch(req.params.branchId);
    const sink = sinks.get(branchId, req.params.sourceId, req.params.sinkId);
    // Only the master token gets here (streamAuthHook); the rule holds should that ever widen.
    requireSourceWrite(requireToken(req), sink.sourceId, sinks.list(branchId, sink.sourceId, false), 'replay the records of');
    const since = new Date(req.body.since);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(req.body.since) || Number.isNaN(since.getTime())) {
      throw new ApiError(400, 'invalidSince', `Invalid "since" time "${req.body.since}": expected RFC 3339, e.g. 2026-11-20T00:00:00Z.`);
    }
    if (sink.disabled) throw new ApiError(409, 'sinkDisabled', `Sink "${sink.sinkId}" is disabled: enable it before replaying its records.`);
    const request = { since, records: req.body.records ?? 'all', fullRemap: req.body.fullRemap ?? false };
    const objectPath = `${branchId}/${sink.sourceId}/${sink.sinkId}`;
    const task = tasks.start('sink.replay', objectPath, lockKey(branchId, sink.sourceId, sink.sinkId) + '/replay', async (progress) => {
      await runtime.reconcile();
      let done;
      try {
        done = await runtime.replay(sink, request, (p) => progress({ ...p }));
      } catch (err) {
        throw new TaskFailure(err instanceof Error ? err.message : String(err));
      }
      return {
        result: `Replayed ${done.written + done.failed + (done.filtered ?? 0)} records: ${done.written} written, ${done.failed} failed mapping again, ${done.filtered ? `${done.filtered} filtered, ` : ''}${done.skipped} skipped.`,
        outputs: { ...done },
      };
    }, { timeoutMs: REPLAY_TIMEOUT_MS });
    return reply.status(202).send(task);
  });
};
