import type { Config } from '../../config.js';
import type { At, By, Column, Sink, SinkMapping, Source, Version } from '../../model/definition.js';
import type { Token } from '../../storage/token-model.js';
import { kafkaTopicName } from '../../model/kafka-topic-names.js';
import { maskCredentialHeaders } from '../../pipeline/headers.js';
import type { Lifecycle, SinkView, SourceQuotaView, SourceView } from '../../contract/stream-sources.js';
import type { RawRecord } from '../../contract/failures.js';

/** The `by` block of versions and timestamps: who called the API. */
export function byToken(token: Token): By {
  return {
    type: 'user',
    tokenId: token.id,
    tokenDesc: token.description,
    userId: String(token.admin?.id ?? token.id),
    userName: token.admin?.name ?? token.description,
  };
}

function at(a: At): At {
  return { at: a.at, by: a.by };
}

export function versionView(v: Version): Version {
  return { number: v.number, hash: v.hash, description: v.description, at: v.at, by: v.by };
}

function lifecycle(e: Source | Sink): Lifecycle {
  return {
    version: versionView(e.version),
    created: at(e.created),
    ...(e.deleted ? { deleted: at(e.deleted) } : {}),
    ...(e.disabled ? { disabled: { ...at(e.disabled), reason: e.disabled.reason } } : {}),
  };
}

/** What a source's view shows of the configuration: its ingestion URLs and Kafka topic. */
export type SourceViewConfig = Pick<Config, 'publicIngestUrl' | 'kafkaBrokers' | 'kafkaTopicPrefix' | 'kafkaTopics'>;

/**
 * A source as the API answers it, with its quota on this node when it has one (`quota`:
 * sources/ingest/source-quotas.ts). Without `withSecret` (a token that may not write to every
 * bucket the source's sinks fill: source-scopes.ts) the fields that carry the ingestion secret
 * are left out: `http.url`, `otlp.url` and `otlp.secret` (`otlp.baseUrl` stays).
 */
export function sourceView(s: Source, config: SourceViewConfig, withSecret: boolean, quota?: SourceQuotaView): SourceView {
  const base = `${config.publicIngestUrl}`;
  const otlpBase = `${base}/otlp/${s.projectId}/${s.sourceId}`;
  const transport =
    s.type === 'otlp'
      ? { otlp: withSecret ? { url: `${otlpBase}/${s.secret}`, baseUrl: otlpBase, secret: s.secret } : { baseUrl: otlpBase } }
      : { http: withSecret ? { url: `${base}/stream/${s.projectId}/${s.sourceId}/${s.secret}` } : {} };
  return {
    projectId: s.projectId,
    branchId: s.branchId,
    sourceId: s.sourceId,
    type: s.type,
    name: s.name,
    description: s.description,
    ...transport,
    // With the Kafka event log: the topic that holds the source's records (producers may write to it).
    ...(config.kafkaBrokers ? { kafka: { topic: kafkaTopicName({ prefix: config.kafkaTopicPrefix, bindings: config.kafkaTopics }, s.projectId, s.branchId, s.sourceId) } } : {}),
    ...lifecycle(s),
    // Sluice's own, only for a source with a quota (so that the reference's answer stays its own).
    ...(quota ? { quota } : {}),
  };
}

/**
 * Columns as the reference echoes them: rawString always for path and template columns. The
 * Sluice extensions only when set (`dataType`, `primaryKey` when true), so that a column without
 * them answers the reference's bytes.
 */
export function columnView(c: Column): Column {
  const out: Column = { type: c.type, name: c.name };
  if (c.type === 'path') {
    out.path = c.path ?? '';
    if (c.defaultValue !== undefined) out.defaultValue = c.defaultValue;
    out.rawString = c.rawString ?? false;
  }
  if (c.type === 'template') {
    out.template = c.template;
    out.rawString = c.rawString ?? false;
  }
  if (c.dataType !== undefined) out.dataType = c.dataType;
  if (c.primaryKey === true) out.primaryKey = true;
  return out;
}

/** The columns as the reference echoes them, and the filter only when there is one (reference answers unchanged without). */
function mappingView(m: SinkMapping): SinkView['table']['mapping'] {
  const columns = m.columns.map(columnView);
  return m.filter ? { columns, filter: { language: m.filter.language, content: m.filter.content } } : { columns };
}

export function sinkView(s: Sink): SinkView {
  return {
    projectId: s.projectId,
    branchId: s.branchId,
    sourceId: s.sourceId,
    sinkId: s.sinkId,
    type: s.type,
    name: s.name,
    description: s.description,
    table: { type: s.table.type, tableId: s.table.tableId, mapping: mappingView(s.table.mapping) },
    ...(s.allowedSignals && s.allowedSignals.length > 0 ? { allowedSignals: s.allowedSignals } : {}),
    ...lifecycle(s),
  };
}

/**
 * A raw record as the API answers it (recent records, mapping failures): as kept, with the
 * senders' credential headers masked (pipeline/headers.ts).
 */
export function recordView(r: RawRecord): RawRecord {
  return { ...r, headers: maskCredentialHeaders(r.headers) };
}
