/**
 * What every ingestion endpoint (HTTP records, connector batches, OTLP) decides the same way
 * before and after appending: the source secret check, whether the answer waits for the durable
 * log write, and the CORS policy of ingestion URLs.
 */
import { syncWaitOf } from '../../levels/triggers.js';
import type { IngestSources, IngestTarget } from './sources.js';
import { secretMatches } from './secret.js';

export { secretMatches } from './secret.js';

/** The `Server` header of the answers to HTTP records. */
export const INGEST_SERVER = 'Sluice/Stream/HTTPSource';
/** The path of an HTTP source's ingestion URL (single records and connector batches). */
export interface IngestParams {
  projectId: string;
  sourceId: string;
  secret: string;
}

/** What a project id in an ingestion path must look like (anything else is a 400). */
export const PROJECT_ID = /^-?\d+$/;

/** The HTTP source with this id and secret (disabled or not), or undefined: "not found" either way. */
export function httpSourceTarget(sources: IngestSources, sourceId: string, secret: string): IngestTarget | undefined {
  const target = sources.lookup(sourceId);
  return target && target.source.type === 'http' && secretMatches(secret, target.source.secret) ? target : undefined;
}

// @fastify/cors (registered globally for the management API) skips routes with `cors: false`;
// ingestion routes answer CORS themselves, with the reference's ingestion policy.
export const OWN_CORS = { cors: false } as Record<string, unknown>;

export const CORS_PREFLIGHT = {
  allow: 'OPTIONS, POST',
  'access-control-allow-methods': 'OPTIONS, POST',
  'access-control-allow-headers': '*',
  'access-control-expose-headers': '*',
  'access-control-allow-origin': '*',
};

/** Waits for durability if any enabled sink wants it; with no enabled sink the source's own setting decides. */
export function needsSyncWait(target: IngestTarget): boolean {
  const own = target.source.config;
  if (target.enabledSinks.length === 0) return syncWaitOf(own);
  return target.enabledSinks.some((sink) => syncWaitOf(own, sink.config));
}
