/**
 * Storage jobs (`GET /v2/storage/jobs/{id}`): the asynchronous operations of the Storage API,
 * here the table exports. A job is created `waiting`, runs `processing` on the node that took
 * the request (with its progress), and ends `success` with its results or `error`.
 */
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import type { IdAllocator } from '../ports/id-allocator.js';
import type { StorageJobResults, StorageJobStatus } from '../contract/storage-jobs.js';

/** The statuses and results are the API contract's (src/contract/storage-jobs.ts). */
export type { StorageJobResults, StorageJobStatus } from '../contract/storage-jobs.js';

export interface StorageJob {
  id: string;
  status: StorageJobStatus;
  operationName: 'tableExport';
  tableId: string;
  operationParams: Record<string, unknown>;
  createdTime: string;
  startTime: string | null;
  endTime: string | null;
  results: StorageJobResults | null;
  creatorToken: { id: string; description: string };
  metrics: { outCompressed: boolean; outBytes: number };
  /** Sluice: rows written so far and in all (when known). */
  progress: { rows: number; totalRows: number | null };
  error?: { code: string; message: string };
  /** When the node running it last said it was alive (at least every HEARTBEAT_MS while processing). */
  heartbeat: string;
}

export const STORAGE_JOB_PREFIX = 'storage/storageJob/';
/** Storage jobs (exports), shared by the cluster: created on one node, followed on any. */
export const STORAGE_JOB_KEY_SPACES: readonly KeySpace[] = [{ prefix: STORAGE_JOB_PREFIX, shared: true }];
/** A processing job updates its heartbeat at least this often... */
export const HEARTBEAT_MS = 5_000;
/** ...and one silent for this long was left by a node that stopped. */
const ABANDONED_MS = 60_000;

const key = (id: string) => `${STORAGE_JOB_PREFIX}${id.padStart(15, '0')}`;

export class StorageJobs {
  constructor(
    private readonly store: MetadataStore,
    private readonly ids: IdAllocator,
  ) {}

  create(job: Omit<StorageJob, 'id' | 'status' | 'createdTime' | 'startTime' | 'endTime' | 'results' | 'metrics' | 'progress' | 'heartbeat'>): StorageJob {
    return this.store.transact((tx) => {
      const now = new Date().toISOString();
      const created: StorageJob = {
        ...job,
        id: this.ids.next(tx, 'storage'),
        status: 'waiting',
        createdTime: now,
        startTime: null,
        endTime: null,
        results: null,
        metrics: { outCompressed: false, outBytes: 0 },
        progress: { rows: 0, totalRows: null },
        heartbeat: now,
      };
      tx.put(key(created.id), created);
      return created;
    });
  }

  /** The job as it stands; a processing job whose node went silent is reported as failed. */
  get(id: string): StorageJob | undefined {
    if (!/^\d{1,15}$/.test(id)) return undefined;
    const job = this.store.get<StorageJob>(key(id));
    if (job?.status === 'processing' && Date.now() - Date.parse(job.heartbeat) > ABANDONED_MS) {
      return {
        ...job,
        status: 'error',
        endTime: job.heartbeat,
        error: { code: 'storage.jobAbandoned', message: 'The node running this job stopped before it finished. Start it again.' },
      };
    }
    return job;
  }

  update(id: string, change: (job: StorageJob) => StorageJob): StorageJob | undefined {
    return this.store.transact((tx) => {
      const job = tx.get<StorageJob>(key(id));
      if (!job) return undefined;
      const next = { ...change(job), heartbeat: new Date().toISOString() };
      tx.put(key(id), next);
      return next;
    });
  }
}
