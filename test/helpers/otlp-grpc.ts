/**
 * OTLP/gRPC clients for tests: a raw @grpc/grpc-js client that sends export requests as bytes
 * (any metadata, gzip by the channel), and a bare HTTP/2 call for frames a gRPC client never
 * sends (a compressed flag over bytes that do not inflate, a gzip bomb). Both give the call's
 * code, message, response and the RetryInfo of `grpc-status-details-bin`, decoded here with
 * types of their own (google.rpc.RetryInfo, google.protobuf.Duration), not Sluice's encoder.
 */
import { connect, constants as h2 } from 'node:http2';
import { Client, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { Signal } from '../../src/model/definition.js';
import { otlpTypes } from '../../src/sources/otlp/schema.js';

export const EXPORT_PATHS: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

export { status as GrpcCode } from '@grpc/grpc-js';

export interface CallAnswer {
  code: number;
  /** The code's name, for readable assertions. */
  codeName: string;
  details: string;
  /** The response message (OK only). */
  response?: Buffer;
  /** The RetryInfo delay of `grpc-status-details-bin`, in milliseconds, when there is one. */
  retryDelayMs?: number;
  /** The google.rpc.Status of `grpc-status-details-bin`: its code and message. */
  statusDetails?: { code: number; message: string };
}

const bytes = (b: Buffer): Buffer => b;

export class OtlpGrpcClient {
  private readonly client: Client;

  /**
   * `gzip`: the channel compresses every message (grpc-encoding: gzip); `ownConnection`: not the
   * connection grpc-js shares between the clients of one address.
   */
  constructor(address: string, options: { gzip?: boolean; ownConnection?: boolean } = {}) {
    this.client = new Client(address, credentials.createInsecure(), {
      ...(options.gzip ? { 'grpc.default_compression_algorithm': 2 } : {}),
      ...(options.ownConnection ? { 'grpc.use_local_subchannel_pool': 1 } : {}),
    });
  }

  /** One Export call; `secret` null sends no authorization metadata; `metadata` adds entries; `deadlineMs` from now (20 s). */
  export(signal: Signal, body: Buffer, secret: string | null, metadata: Record<string, string> = {}, authorization?: string, deadlineMs = 20_000): Promise<CallAnswer> {
    const md = new Metadata();
    if (authorization !== undefined) md.set('authorization', authorization);
    else if (secret !== null) md.set('authorization', `Bearer ${secret}`);
    for (const [k, v] of Object.entries(metadata)) md.set(k, v);
    return new Promise((resolve) => {
      this.client.makeUnaryRequest(EXPORT_PATHS[signal], bytes, bytes, body, md, { deadline: Date.now() + deadlineMs }, (err: ServiceError | null, response?: Buffer) => {
        if (err) {
          const bin = err.metadata?.get('grpc-status-details-bin')[0];
          resolve({ code: err.code, codeName: status[err.code], details: err.details, ...statusDetails(Buffer.isBuffer(bin) ? bin : undefined) });
        } else {
          resolve({ code: status.OK, codeName: 'OK', details: '', response: response ?? Buffer.alloc(0) });
        }
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

/**
 * One gRPC call over a bare HTTP/2 stream: the message frame as given (`compressed`: the flag
 * that says the bytes are in `encoding`), the trailers read back.
 */
export async function rawCall(address: string, path: string, message: Buffer, options: { compressed?: boolean; encoding?: string; secret?: string } = {}): Promise<CallAnswer> {
  const session = connect(`http://${address}`);
  try {
    const headers: Record<string, string> = {
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: path,
      'content-type': 'application/grpc',
      te: 'trailers',
    };
    if (options.encoding) headers['grpc-encoding'] = options.encoding;
    if (options.secret) headers.authorization = `Bearer ${options.secret}`;
    const req = session.request(headers);
    const frame = Buffer.alloc(5);
    frame.writeUInt8(options.compressed ? 1 : 0, 0);
    frame.writeUInt32BE(message.length, 1);
    const answer = new Promise<CallAnswer>((resolve, reject) => {
      let meta: Record<string, unknown> = {};
      const chunks: Buffer[] = [];
      req.on('response', (h) => (meta = { ...meta, ...h }));
      req.on('trailers', (t) => (meta = { ...meta, ...t }));
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('error', reject);
      req.on('close', () => {
        const code = Number(meta['grpc-status'] ?? -1);
        const details = decodeURIComponent(String(meta['grpc-message'] ?? ''));
        const bin = typeof meta['grpc-status-details-bin'] === 'string' ? Buffer.from(meta['grpc-status-details-bin'], 'base64') : undefined;
        const body = Buffer.concat(chunks);
        resolve({ code, codeName: status[code] ?? String(code), details, response: code === 0 ? body.subarray(5) : undefined, ...statusDetails(bin) });
      });
    });
    // The stream may be answered (and reset) before all of a large message is written.
    req.on('error', () => undefined);
    req.write(frame);
    req.end(message);
    return await answer;
  } finally {
    session.close();
  }
}

/** google.rpc.RetryInfo and google.protobuf.Duration, as error_details.proto and duration.proto define them. */
const details = protobuf.Root.fromJSON({
  nested: {
    Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
    RetryInfo: { fields: { retryDelay: { type: 'Duration', id: 1 } } },
  },
});

function statusDetails(bin: Buffer | undefined): Pick<CallAnswer, 'retryDelayMs' | 'statusDetails'> {
  if (!bin) return {};
  const rpc = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(bin), { longs: Number, defaults: true }) as {
    code: number; message: string; details: Array<{ type_url: string; value: Uint8Array }>;
  };
  const out: Pick<CallAnswer, 'retryDelayMs' | 'statusDetails'> = { statusDetails: { code: rpc.code, message: rpc.message } };
  const retry = rpc.details.find((d) => d.type_url === 'type.googleapis.com/google.rpc.RetryInfo');
  if (retry) {
    const info = details.lookupType('RetryInfo').toObject(details.lookupType('RetryInfo').decode(retry.value), { longs: Number, defaults: true }) as { retryDelay?: { seconds: number; nanos: number } };
    out.retryDelayMs = (info.retryDelay?.seconds ?? 0) * 1000 + (info.retryDelay?.nanos ?? 0) / 1e6;
  }
  return out;
}

/** Export requests as protobuf. */
export function logsRequest(n: number, body = (i: number) => `line ${i}`): Buffer {
  const t = otlpTypes().logsRequest;
  const logRecords = Array.from({ length: n }, (_, i) => ({ severityText: 'INFO', body: { stringValue: body(i) } }));
  return Buffer.from(t.encode(t.fromObject({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'grpc-test' } }] }, scopeLogs: [{ logRecords }] }] })).finish());
}

export function spansRequest(n: number): Buffer {
  const t = otlpTypes().traceRequest;
  const spans = Array.from({ length: n }, (_, i) => ({ name: `op ${i}`, traceId: Buffer.alloc(16, 7), spanId: Buffer.alloc(8, i + 1), kind: 2 }));
  return Buffer.from(t.encode(t.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] })).finish());
}
