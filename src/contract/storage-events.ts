/**
 * The API contract (see stream-sources.ts for why the types are the source): the Storage API's
 * events (src/storage/events.ts keeps them; GET /v2/storage/events answers them with `created`
 * as a Storage date).
 */

/** A Storage event: job logs and other notes, read at GET /v2/storage/events. */
export interface StorageEvent {
  id: string;
  uuid: string;
  event: string;
  component: string;
  message: string;
  description: string;
  type: 'info' | 'success' | 'warn' | 'error';
  runId: string | null;
  created: string;
  configurationId: string | null;
  objectId: string;
  objectName: string;
  objectType: string;
  context: Record<string, unknown>;
  params: Record<string, unknown>;
  results: Record<string, unknown>;
  performance: Record<string, unknown>;
  /** The token that posted the event through the API (`POST /v2/storage/events`); absent on the job runner's own lines. */
  token?: { id: string; name: string };
}
