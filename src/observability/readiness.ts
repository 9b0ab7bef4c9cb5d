/**
 * Readiness (`GET /health/ready`): whether this node can do its work now. Each check answers
 * "ok" or why not; the node is ready when all are ok. Liveness (`/health/live`) is only that the
 * process answers.
 */
import type { MetadataStore } from '../ports/metadata-store.js';
import type { EventLog } from '../ports/event-log.js';

export interface ReadinessDeps {
  metadata: MetadataStore;
  eventLog: EventLog;
  /** Whether the target answers (it never throws). */
  pingTarget(): Promise<boolean>;
  /** A description of the target for the reason (no secrets). */
  targetDescription: string;
  isShuttingDown(): boolean;
}

export interface Readiness {
  ready: boolean;
  /** metadata, eventLog, target, draining: "ok" or the reason. */
  checks: Record<string, string>;
}

const TARGET_WAIT_MS = 2000;

export async function readiness(deps: ReadinessDeps): Promise<Readiness> {
  const checks: Record<string, string> = {};
  try {
    deps.metadata.get('node/readiness-probe');
    checks.metadata = 'ok';
  } catch (err) {
    checks.metadata = `the metadata store cannot be read: ${(err as Error).message}`;
  }
  const [log, target] = await Promise.all([
    deps.eventLog.ready().catch((err: unknown) => (err as Error).message),
    Promise.race([deps.pingTarget(), new Promise<false>((r) => setTimeout(() => r(false), TARGET_WAIT_MS).unref())]),
  ]);
  checks.eventLog = log ?? 'ok';
  checks.target = target ? 'ok' : `${deps.targetDescription} does not answer`;
  checks.draining = deps.isShuttingDown() ? 'the node is stopping' : 'ok';
  return { ready: Object.values(checks).every((c) => c === 'ok'), checks };
}
