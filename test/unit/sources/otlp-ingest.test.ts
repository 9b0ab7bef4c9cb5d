/**
 * The OTLP export core (sources/otlp/ingest.ts) without a transport: what it appends, when it
 * asks the quota and with what, and that a refusal stores nothing and gives the in-flight
 * budget back.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { BacklogGate } from '../../../src/actors/backlog-gate.js';
import { ApiError, LoggedRefusal } from '../../../src/http/errors.js';
import type { Sink, Source } from '../../../src/model/definition.js';
import { compileMapping } from '../../../src/pipeline/columns/index.js';
import { sourceTopic } from '../../../src/ports/event-log.js';
import type { QuotaVerdict, SourceQuotas } from '../../../src/sources/ingest/quota.js';
import type { IngestTarget } from '../../../src/sources/ingest/sources.js';
import { QuotaRefusal } from '../../../src/sources/otlp/answers.js';
import { OtlpDecodeError } from '../../../src/sources/otlp/decode.js';
import { InflightBudget } from '../../../src/sources/otlp/inflight.js';
import { OtlpIngest, type OtlpExportRequest } from '../../../src/sources/otlp/ingest.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';
import { logsRequest } from '../../helpers/otlp-grpc.js';

const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };
const source: Source = { projectId: 1, branchId: 2, sourceId: 'otel', name: 'otel', description: '', type: 'otlp', secret: 's'.repeat(48), version, created: at };
const sink = (sinkId: string, columns: Sink['table']['mapping']['columns']): Sink => ({
  projectId: 1, branchId: 2, sourceId: 'otel', sinkId, name: sinkId, description: '', type: 'table',
  table: { type: 'keboola', tableId: `in.c-otel.${sinkId}`, mapping: { columns } }, version, created: at,
});
const TOPIC = sourceTopic(1, 2, 'otel');
const silent = { warn: () => undefined, error: () => undefined };

function setup(options: { verdict?: QuotaVerdict; behind?: boolean; sinks?: Sink[] } = {}) {
  const log = new MemoryEventLog();
  const inflight = new InflightBudget(1 << 20);
  const asked: Array<[number, number]> = [];
  const quotas: SourceQuotas = {
    take: (_target, records, bytes) => {
      asked.push([records, bytes]);
      return options.verdict ?? { ok: true };
    },
  };
  const backlog = { refuses: () => options.behind === true } as unknown as BacklogGate;
  const ingest = new OtlpIngest({ eventLog: log, backlog, mappings: { get: (s: Sink) => compileMapping(s.table.mapping.columns) }, projectId: 1, maxBodyBytes: 64 * 1024, inflight, quotas });
  const target: IngestTarget = { source, enabledSinks: options.sinks ?? [sink('all', [{ type: 'body', name: 'body' }])] };
  const request = (body: Buffer, extra: Partial<OtlpExportRequest> = {}): OtlpExportRequest => ({
    target, signal: 'logs', encoding: 'protobuf', body, ip: '10.0.0.1', headers: { 'User-Agent': 'test' }, log: silent, ...extra,
  });
  return { log, inflight, asked, ingest, target, request };
}

describe('OTLP export core', () => {
  it('appends the flattened records as one batch, asking the quota once with their count and stored bytes', async () => {
    const { log, asked, ingest, request } = setup({ verdict: { ok: true, headers: { ratelimit: '"records";r=9;t=1' } } });
    const result = await ingest.export(request(logsRequest(3)));
    expect(result).toEqual({ records: 3, partial: undefined, quotaHeaders: { ratelimit: '"records";r=9;t=1' } });
    const logged = log.read(TOPIC, 0, 100);
    expect(logged).toHaveLength(3);
    expect(log.appendCalls).toBe(1);
    for (const { record } of logged) expect(record).toMatchObject({ signal: 'logs', ip: '10.0.0.1', headers: { 'User-Agent': 'test' } });
    expect(asked).toEqual([[3, logged.reduce((n, r) => n + r.record.body.length, 0)]]);
  });

  it('inflates a gzip body within the limit, and refuses one that inflates past it (413)', async () => {
    const { log, inflight, ingest, request } = setup();
    expect((await ingest.export(request(gzipSync(logsRequest(2)), { contentEncoding: 'gzip' }))).records).toBe(2);
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024));
    const err = await ingest.export(request(bomb, { contentEncoding: 'gzip' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).statusCode).toBe(413);
    expect(log.read(TOPIC, 0, 100)).toHaveLength(2);
    expect(inflight.inUse).toBe(0);
  });

  it('refuses the whole request over the quota: nothing stored, the budget given back', async () => {
    const verdict: QuotaVerdict = { ok: false, limit: 'bytes', retryAfterMs: 700, headers: { 'retry-after': '1' }, message: 'Over.' };
    const { log, inflight, ingest, request } = setup({ verdict });
    const err = await ingest.export(request(logsRequest(5))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuotaRefusal);
    expect((err as QuotaRefusal).verdict).toBe(verdict);
    expect((err as QuotaRefusal).statusCode).toBe(429);
    expect(log.appendCalls).toBe(0);
    expect(inflight.inUse).toBe(0);
  });

  it('asks no quota for an empty request, and none for one it cannot decode', async () => {
    const { log, asked, ingest, request } = setup();
    expect(await ingest.export(request(Buffer.alloc(0)))).toEqual({ records: 0 });
    await expect(ingest.export(request(Buffer.from([0x0a, 0xff])))).rejects.toBeInstanceOf(OtlpDecodeError);
    expect(asked).toEqual([]);
    expect(log.appendCalls).toBe(0);
  });

  it('counts the records a sink cannot map as partial_success, and keeps them', async () => {
    const { log, ingest, request } = setup({ sinks: [sink('users', [{ type: 'path', name: 'user', path: 'attributes.user' }])] });
    const result = await ingest.export(request(logsRequest(2)));
    expect(result.partial).toMatchObject({ rejected: 2 });
    expect(result.partial!.errorMessage).toMatch(/^2 of 2 records rejected; first error: sink "users"/);
    expect(log.read(TOPIC, 0, 100)).toHaveLength(2);
  });

  it('refuses before decoding while the sinks are too far behind (429)', () => {
    const { ingest, target } = setup({ behind: true });
    expect(() => ingest.admit(target)).toThrow(LoggedRefusal);
    expect(() => setup().ingest.admit(target)).not.toThrow();
  });
});
