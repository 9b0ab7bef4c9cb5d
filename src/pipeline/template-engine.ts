import type { IngestRecord } from './record.js';

/**
 * TemplateEngine port: compiles a Jsonnet template once (per sink version) and evaluates it
 * per record with the seed's globals (Ip, Body, BodyStr, Header, HeaderStr, Now) bound to
 * that record. The embedded adapter is libjsonnet (@hanazuki/node-jsonnet) until Sluice's
 * own compiler lands.
 */
export interface TemplateEngine {
  /** Syntax check: undefined when valid, otherwise "<line>:<col>-<col> <message>" as go-jsonnet prints it. */
  check(content: string): Promise<string | undefined>;
  compile(content: string): Promise<CompiledTemplate>;
}

export interface CompiledTemplate {
  /** Evaluates to the compact JSON text of the result; rejects with a TemplateError. */
  evaluate(record: RecordContext): Promise<string>;
}

/** A record plus lazily parsed views of it, shared by every column of every sink. */
export interface RecordContext {
  readonly record: IngestRecord;
  /** Parsed body (JSON or form); throws a MappingError for unsupported content or bad JSON. */
  parsedBody(): unknown;
}

export class TemplateError extends Error {}
