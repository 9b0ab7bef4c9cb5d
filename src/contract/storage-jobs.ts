/**
 * The API contract (see stream-sources.ts for why the types are the source): the Storage API's
 * jobs and files, as a table export makes them (src/api/storage/exports.ts jobJson and fileJson
 * build them; POST /v2/storage/tables/{tableId}/export-async, GET /v2/storage/jobs/{id},
 * GET /v2/storage/files/{id}). Unlike most answers these routes have strict response schemas
 * (exports.ts: jobSchema, fileSchema), which serialise exactly the properties they list;
 * test/unit/repository/contract-schemas.test.ts checks them against these types.
 */

export type StorageJobStatus = 'waiting' | 'processing' | 'success' | 'error';

/** What a finished export reports: its file (GET /v2/storage/files/{id}) and its rows. */
export interface StorageJobResults {
  file: { id: number };
  totalRowsCount: number;
}

/** A Storage job as GET /v2/storage/jobs/{id} answers it. */
export interface StorageJobJson {
  id: number;
  status: StorageJobStatus;
  url: string;
  tableId: string;
  operationName: 'tableExport';
  /** The options as given, and the export as resolved (`export`). */
  operationParams: Record<string, unknown>;
  /** Storage dates. */
  createdTime: string;
  startTime: string | null;
  endTime: string | null;
  runId: null;
  /** Once it succeeded. */
  results: StorageJobResults | null;
  creatorToken: { id: string; description: string };
  metrics: { outCompressed: boolean; outBytes: number };
  /** Sluice: rows written so far and in all (when known). */
  progress: { rows: number; totalRows: number | null };
  /** Once it failed. */
  error?: { code: string; message: string };
}

/** A file as GET /v2/storage/files/{id} answers it. */
export interface StorageFileJson {
  id: number;
  /** Storage date. */
  created: string;
  isPublic: false;
  isSliced: false;
  isEncrypted: false;
  name: string;
  /** Signed download URL of the node holding the file, valid for an hour; no token needed. */
  url: string;
  provider: 'sluice';
  region: '';
  sizeBytes: number;
  contentType: string;
  tags: string[];
  maxAgeDays: number;
  /** Storage date after which the file is deleted. */
  expires: string;
  runId: null;
  runIds: [];
  creatorId: number;
  creatorToken: { id: string; description: string };
}
