/**
 * What the table pages read from the Storage API (GET /v2/storage/buckets, /tables): one home
 * for the shapes, so that the list (tables.tsx) and one table's pages (table-detail.tsx,
 * table-export.tsx) import them without importing each other.
 */
export interface Bucket {
  id: string;
  name: string;
  displayName: string;
  stage: string;
  created: string;
}

export interface Table {
  id: string;
  name: string;
  created: string;
  lastImportDate: string | null;
  lastChangeDate: string;
  rowsCount: number;
  columns?: string[];
  bucket: { id: string; stage: string; name: string; displayName: string };
  metadata: { key: string; value: string }[];
}
