import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { ProtobufLogsSerializer, JsonLogsSerializer, ProtobufTraceSerializer, JsonTraceSerializer, ProtobufMetricsSerializer, JsonMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { LoggerProvider, InMemoryLogRecordExporter, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { AggregationType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { decodeExportRequest, encodingOf, OtlpDecodeError } from '../../../src/sources/otlp/decode.js';
import { encodeExportResponse, encodeRpcStatus } from '../../../src/sources/otlp/encode.js';
import { otlpTypes } from '../../../src/sources/otlp/schema.js';
import { flatten } from '../../../src/sources/otlp/flatten.js';

class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

describe('content negotiation', () => {
  it('maps Content-Type to an encoding, ignoring parameters and case', () => {
    expect(encodingOf('application/x-protobuf')).toBe('protobuf');
    expect(encodingOf('Application/Protobuf; foo=bar')).toBe('protobuf');
    expect(encodingOf('application/json; charset=utf-8')).toBe('json');
    expect(encodingOf('text/plain')).toBeUndefined();
    expect(encodingOf(undefined)).toBeUndefined();
  });
});

describe('oneof members on the wire', () => {
  it('keeps the last member of a oneof the wire repeats, as protobuf says (the setter deletes only members the message has)', () => {
    // A log record whose body (an AnyValue) carries string_value "first", then int_value 42.
    const body = protobuf.Writer.create().uint32((1 << 3) | 2).string('first').uint32((3 << 3) | 0).int64(42).finish();
    const logRecord = protobuf.Writer.create().uint32((5 << 3) | 2).bytes(body).finish();
    const scopeLogs = protobuf.Writer.create().uint32((2 << 3) | 2).bytes(logRecord).finish();
    const resourceLogs = protobuf.Writer.create().uint32((2 << 3) | 2).bytes(scopeLogs).finish();
    const request = protobuf.Writer.create().uint32((1 << 3) | 2).bytes(resourceLogs).finish();
    const [record] = flatten('logs', decodeExportRequest('logs', 'protobuf', request));
    expect(JSON.parse(record).body).toBe(42);
    const message = otlpTypes().logsRequest.decode(request) as unknown as { resourceLogs: Array<{ scopeLogs: Array<{ logRecords: Array<{ body: object }> }> }> };
    const decoded = message.resourceLogs[0].scopeLogs[0].logRecords[0].body;
    expect(Object.keys(decoded)).toEqual(['intValue']);
    expect((decoded as { value?: string }).value).toBe('intValue');
  });
});

describe('decoding what the OpenTelemetry JS SDK sends', () => {
  it('gives the same flattened records for protobuf and JSON (logs, traces, every metric type the SDK makes)', async () => {
    const logsExporter = new InMemoryLogRecordExporter();
    const logs = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logsExporter } as never)] });
    logs.getLogger('l', '1').emit({ body: { msg: 'hi', list: [1, 'two'] }, severityNumber: 9, severityText: 'INFO', attributes: { 'user.id': 42, ok: true, ratio: 0.5 } });
    await logs.forceFlush();
    const logRecords = logsExporter.getFinishedLogRecords();
    expect(logRecords).toHaveLength(1);
    const fromProto = flatten('logs', decodeExportRequest('logs', 'protobuf', ProtobufLogsSerializer.serializeRequest(logRecords)!));
    const fromJson = flatten('logs', decodeExportRequest('logs', 'json', JsonLogsSerializer.serializeRequest(logRecords)!));
    expect(fromJson).toEqual(fromProto);
    expect(JSON.parse(fromProto[0])).toMatchObject({ severity_number: 9, body: { msg: 'hi', list: [1, 'two'] }, attributes: { 'user.id': 42, ok: true, ratio: 0.5 }, scope: { name: 'l', version: '1' } });

    const spans = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('t');
    const span = tracer.startSpan('work', { kind: 2 }); // the API's CLIENT (OTLP's SPAN_KIND_CLIENT is 3)
    span.addEvent('e');
    span.end();
    const finished = spans.getFinishedSpans();
    const tProto = flatten('traces', decodeExportRequest('traces', 'protobuf', ProtobufTraceSerializer.serializeRequest(finished)!));
    const tJson = flatten('traces', decodeExportRequest('traces', 'json', JsonTraceSerializer.serializeRequest(finished)!));
    expect(tJson).toEqual(tProto);
    expect(JSON.parse(tProto[0])).toMatchObject({ name: 'work', kind: 'Client', trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });

    const reader = new CollectingReader();
    const meters = new MeterProvider({ readers: [reader], views: [{ instrumentName: 'exp', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }] });
    const meter = meters.getMeter('m');
    meter.createCounter('count').add(2);
    meter.createUpDownCounter('updown').add(-2);
    meter.createHistogram('hist').record(4);
    meter.createHistogram('exp').record(4);
    meter.createGauge('gauge').record(1.5);
    const { resourceMetrics } = await reader.collect();
    const mProto = flatten('metrics', decodeExportRequest('metrics', 'protobuf', ProtobufMetricsSerializer.serializeRequest(resourceMetrics)!));
    const mJson = flatten('metrics', decodeExportRequest('metrics', 'json', JsonMetricsSerializer.serializeRequest(resourceMetrics)!));
    expect(mJson).toEqual(mProto);
    expect(mProto.map((r) => JSON.parse(r).metric_type).sort()).toEqual(['exponential_histogram', 'gauge', 'histogram', 'sum', 'sum']);
  });
});

describe('OTLP/JSON', () => {
  it('reads an enum by its integer or its name (as protobuf JSON writes it); an unknown name is the zero value, an unknown integer is kept', () => {
    const severity = (value: unknown): unknown => {
      const body = Buffer.from(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: value, body: { stringValue: 'x' } }] }] }] }));
      const request = decodeExportRequest('logs', 'json', body) as unknown as { resourceLogs: Array<{ scopeLogs: Array<{ logRecords: Array<{ severityNumber?: number }> }> }> };
      return request.resourceLogs[0].scopeLogs[0].logRecords[0].severityNumber ?? 0;
    };
    expect(severity(9)).toBe(9);
    expect(severity('SEVERITY_NUMBER_INFO')).toBe(9);
    expect(severity('no such severity')).toBe(0);
    expect(severity(99)).toBe(99);
  });

  it('reads hex ids, integer enums and 64-bit integers as strings or numbers, exactly', () => {
    const body = Buffer.from(
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"eee19b7ec3c1b174","kind":2,' +
        '"startTimeUnixNano":"1700000000123456789","endTimeUnixNano":1700000000000000000,"unknownField":{"x":1},' +
        '"attributes":[{"key":"big","value":{"intValue":9007199254740993}},{"key":"s","value":{"intValue":"-9007199254740993"}}]}]}]}]}',
    );
    const [record] = flatten('traces', decodeExportRequest('traces', 'json', body));
    expect(record).toContain('"attributes":{"big":9007199254740993,"s":-9007199254740993}');
    expect(JSON.parse(record)).toMatchObject({
      trace_id: '5b8efff798038103d269b633813fc60c', span_id: 'eee19b7ec3c1b174', kind: 'Server',
      timestamp: '2023-11-14T22:13:20.123456789Z', end_timestamp: '2023-11-14T22:13:20.000000000Z',
    });
  });

  it('refuses bad JSON, non-objects, non-hex ids and absurd nesting with an OtlpDecodeError', () => {
    const bad = (s: string, signal: 'logs' | 'traces' = 'logs') => () => decodeExportRequest(signal, 'json', Buffer.from(s));
    expect(bad('{"resourceLogs":')).toThrow(OtlpDecodeError);
    expect(bad('[1,2]')).toThrow(OtlpDecodeError);
    expect(bad('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abc"}]}]}]}', 'traces')).toThrow(/traceId must be a hex string/);
    expect(bad('{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":12}]}]}]}', 'traces')).toThrow(OtlpDecodeError);
    expect(bad('{"a":' + '['.repeat(500) + ']'.repeat(500) + '}')).toThrow(/deeper/);
    // "__proto__" stays a plain key.
    expect(() => decodeExportRequest('logs', 'json', Buffer.from('{"__proto__":{"resourceLogs":[1]}}'))).not.toThrow();
  });
});

describe('protobuf', () => {
  it('refuses truncated or malformed bytes with an OtlpDecodeError', () => {
    const t = otlpTypes().logsRequest;
    const good = Buffer.from(t.encode(t.fromObject({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityText: 'x'.repeat(50) }] }] }] })).finish());
    expect(() => decodeExportRequest('logs', 'protobuf', good.subarray(0, good.length - 5))).toThrow(OtlpDecodeError);
    expect(() => decodeExportRequest('logs', 'protobuf', Buffer.from([0x0f, 0xff]))).toThrow(OtlpDecodeError);
    expect(decodeExportRequest('logs', 'protobuf', Buffer.alloc(0))).toMatchObject({});
  });

  it('survives values nested deeper than any stack', () => {
    // AnyValue{array_value{values[AnyValue{...}]}} nested 100 000 times: decoding overflows the stack, which is a 400, not a crash.
    const leaf = Buffer.from([0x0a, 0x01, 0x78]); // AnyValue{string_value: "x"}
    // Length-delimited fields nest without trailers: the message is every header, outermost
    // first, then the leaf. Built inside out in linear time.
    const tags = [0x0a, 0x12, 0x12, 0x2a]; // resource_logs{scope_logs{log_records{body}}}
    for (let i = 0; i < 100_000; i++) tags.push(0x2a, 0x0a); // array_value(5){ values(1) }
    const headers: Buffer[] = [];
    let length = leaf.length;
    for (let i = tags.length - 1; i >= 0; i--) {
      const h = Buffer.concat([Buffer.from([tags[i]]), varint(length)]);
      headers.push(h);
      length += h.length;
    }
    const body = Buffer.concat([...headers.reverse(), leaf]);
    let result: unknown;
    try {
      result = flatten('logs', decodeExportRequest('logs', 'protobuf', body));
    } catch (err) {
      expect(err).toBeInstanceOf(OtlpDecodeError);
      return;
    }
    expect(Array.isArray(result)).toBe(true);
  });
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

describe('answers', () => {
  it('encodes empty and partial responses in both encodings', () => {
    expect(encodeExportResponse('logs', 'protobuf').length).toBe(0);
    expect(encodeExportResponse('logs', 'json').toString()).toBe('{}');
    expect(JSON.parse(encodeExportResponse('metrics', 'json', { rejected: 2, errorMessage: 'x' }).toString())).toEqual({ partialSuccess: { rejectedDataPoints: '2', errorMessage: 'x' } });
    const t = otlpTypes().traceResponse;
    const decoded = t.toObject(t.decode(encodeExportResponse('traces', 'protobuf', { rejected: 5, errorMessage: 'why' })), { longs: Number });
    expect(decoded).toEqual({ partialSuccess: { rejectedSpans: 5, errorMessage: 'why' } });
    const s = otlpTypes().rpcStatus;
    expect(s.toObject(s.decode(encodeRpcStatus(3, 'bad')))).toEqual({ code: 3, message: 'bad' });
  });
});
