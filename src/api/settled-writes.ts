/**
 * Cluster mode: a write API call answers only once its change is in the cluster's metadata log
 * (`MetadataStore.settled()`), so that whatever the answer confirms (a source created, a task
 * to poll, a token) can be read on any node, and survives this node. When the log does not take
 * it, the call answers 503 instead of its success: the change may be lost, the client retries.
 */
import type { FastifyInstance } from 'fastify';
import type { MetadataStore } from '../ports/metadata-store.js';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

const marks = new WeakMap<object, number>();

export function answerWritesWhenSettled(app: FastifyInstance, metadata: MetadataStore): void {
  app.addHook('onRequest', (req, _reply, done) => {
    if (!READS.has(req.method)) marks.set(req, metadata.writeMark());
    done();
  });
  app.addHook('onSend', async (req, reply, payload) => {
    if (READS.has(req.method)) return payload;
    const mark = marks.get(req) ?? 0;
    // Nothing written since the request began (ingestion, most calls): nothing to wait for.
    if (metadata.writeMark() === mark) return payload;
    try {
      // Only writes since this request began count (another request's failed write is its own).
      await metadata.settled(mark);
      return payload;
    } catch (err) {
      const message = `The change could not be shared with the other cluster nodes (${(err as Error).message}); it may be lost. Please retry.`;
      req.log.error({ err }, 'metadata change not settled in the cluster log');
      reply.code(503).header('retry-after', '1').type('application/json');
      return JSON.stringify({ statusCode: 503, error: 'stream.api.clusterUnavailable', message });
    }
  });
}
