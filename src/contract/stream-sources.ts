/**
 * The API contract: the shapes of the API's answers and request bodies, declared once here and
 * imported by both the server (which builds the answers: its view functions are typed with
 * these) and the console (which reads them; type-only imports). `npm run lint` refuses a type
 * declared both in the console and in the server (scripts/check-duplicate-types.mjs), and lets
 * this folder import only model/ (.dependency-cruiser.cjs).
 *
 * Why the types are the source, and not derived from the route schemas: the answers have no
 * schemas to derive them from. Their fastify response schemas are deliberately loose
 * (`looseObject`: documentation only), because a strict response schema makes fastify serialise
 * through it, which drops the properties it does not list and would change the bytes the
 * reference's clients compare. The request bodies have real JSON schemas (validation and the
 * OpenAPI document); their types are declared here too, and
 * test/unit/repository/contract-schemas.test.ts checks at compile time that each schema names
 * exactly the type's properties (and requires the type's required ones), so a schema and its
 * type cannot drift apart. The few routes with strict response schemas (the Storage API's
 * configurations, exports and files) are checked the same way. That keeps one way of writing a
 * shape (plain TypeScript, unions and all) and needs no schema-to-type library.
 *
 * The files follow the route families. Each imports only model/ (plain shapes, no code), so the
 * console's bundle takes nothing from the server.
 *
 * This file: the Stream API's sources and sinks (src/api/stream/views.ts builds them).
 */
import type { At, Column, MappingFilter, Signal, SourceType, Version } from '../model/definition.js';
import type { Task } from './tasks.js';

export type { At, BaseType, By, Column, ColumnType, Signal, SourceType, Version } from '../model/definition.js';
/** Which data types a column type may have, and which column types may be part of the primary key (the API's checks). */
export { DATA_TYPES_OF, KEY_COLUMN_TYPES } from '../model/definition.js';

/** What sources and sinks show of their life: the current version, creation, deletion, disabling. */
export interface Lifecycle {
  version: Version;
  created: At;
  deleted?: At;
  disabled?: At & { reason: string };
}

/**
 * A source as the API answers it (sourceView). For a token that may not see the ingestion
 * secret, `http.url`, `otlp.url` and `otlp.secret` are left out (`otlp.baseUrl` stays).
 */
export interface SourceView extends Lifecycle {
  projectId: number;
  branchId: number;
  sourceId: string;
  type: SourceType;
  name: string;
  description: string;
  /** HTTP sources. */
  http?: { url?: string };
  /** OTLP sources. */
  otlp?: { url?: string; baseUrl: string; secret?: string };
  /** With the Kafka event log: the topic that holds the source's records. */
  kafka?: { topic: string };
  /** Sluice's own, only when the source has a quota (its settings or the node's defaults). */
  quota?: SourceQuotaView;
}

/**
 * A source's quota on the node that answers (each node enforces it on its own): records and
 * record bytes a second, and when that node last refused a request of the source over it.
 */
export interface SourceQuotaView {
  /** Absent: no records quota. */
  recordsPerSecond?: number;
  /** Absent: no bytes quota. */
  bytesPerSecond?: number;
  /** When this node last answered 429 to the source for its quota, if within the last minute. */
  throttledAt?: string;
}

/** A sink as the API answers it (sinkView): its mapping's columns as columnView echoes them. */
export interface SinkView extends Lifecycle {
  projectId: number;
  branchId: number;
  sourceId: string;
  sinkId: string;
  type: 'table';
  name: string;
  description: string;
  /** `filter` only when the sink has one (a Sluice addition: the reference's answer otherwise). */
  table: { type: 'keboola'; tableId: string; mapping: { columns: Column[]; filter?: MappingFilter } };
  /** Only when not empty (empty: every signal). */
  allowedSignals?: Signal[];
}

/**
 * A mapping column as requests give it: the answer's column (with the Sluice extensions
 * `dataType` and `primaryKey`, echoed only when set).
 */
export type ColumnBody = Column;

/** POST .../sources: the body. */
export interface SourceCreate {
  sourceId?: string;
  name: string;
  description?: string;
  type: SourceType;
}

/** PATCH .../sources/{sourceId}: the body. */
export interface SourceUpdate {
  name?: string;
  description?: string;
  type?: SourceType;
  changeDescription?: string;
}

/** The table of a sink request (all optional in an update). */
export interface SinkTableRequest {
  type?: 'keboola';
  tableId?: string;
  /** A mapping replaces the sink's whole mapping: its filter too (none given: the sink has none). */
  mapping?: { columns: ColumnBody[]; filter?: MappingFilter };
}

/** POST .../sources/{sourceId}/sinks: the body. */
export interface SinkCreate {
  sinkId?: string;
  name: string;
  description?: string;
  type: 'table';
  table: Required<Pick<SinkTableRequest, 'tableId' | 'mapping'>> & { type: 'keboola' };
  allowedSignals?: Signal[];
}

/** PATCH .../sinks/{sinkId}: the body. */
export interface SinkUpdate {
  name?: string;
  description?: string;
  type?: 'table';
  table?: SinkTableRequest;
  allowedSignals?: Signal[];
  changeDescription?: string;
}

/** The page of a paged list (paginate): `lastId` is the `afterId` of the next page ("" after the last). */
export interface Page {
  limit: number;
  totalCount: number;
  afterId: string;
  lastId: string;
}

/** GET .../sources/{sourceId}/versions (and a sink's). */
export interface VersionsAnswer {
  versions: Version[];
  page: Page;
}

/** GET .../sources and .../sources/deleted. */
export interface SourcesAnswer {
  projectId: number;
  branchId: number;
  page: Page;
  sources: SourceView[];
}

/** GET .../sources/{sourceId}/sinks. */
export interface SinksAnswer {
  projectId: number;
  branchId: number;
  sourceId: string;
  page: Page;
  sinks: SinkView[];
}

/** POST .../sources/{sourceId}/otlp/default-sinks: one task per sink created, an error for one that exists. */
export interface DefaultSinksAnswer {
  projectId: number;
  branchId: number;
  sourceId: string;
  sinks: ({ sinkId: string; tableId: string; task: Task } | { sinkId: string; tableId: string; error: string })[];
}
