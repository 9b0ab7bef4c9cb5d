/**
 * The gRPC status of each refusal of the OTLP export core (sources/otlp-grpc/status.ts), and
 * the RetryInfo detail of `grpc-status-details-bin`, decoded with types written from
 * error_details.proto and duration.proto here (not with the encoder under test).
 */
import { status as Code } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { ApiError, LoggedRefusal } from '../../../src/http/errors.js';
import { EventLogFullError } from '../../../src/ports/event-log.js';
import { QuotaRefusal } from '../../../src/sources/otlp/answers.js';
import { OtlpDecodeError } from '../../../src/sources/otlp/decode.js';
import { retryInfo, RETRY_INFO_TYPE_URL } from '../../../src/sources/otlp/encode.js';
import { FlattenLimitError } from '../../../src/sources/otlp/flatten.js';
import { otlpTypes } from '../../../src/sources/otlp/schema.js';
import { GrpcRefusal, refusalOf, statusOf } from '../../../src/sources/otlp-grpc/status.js';

const types = protobuf.Root.fromJSON({
  nested: {
    Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
    RetryInfo: { fields: { retryDelay: { type: 'Duration', id: 1 } } },
  },
});
const RetryInfo = types.lookupType('RetryInfo');

function delayOf(value: Uint8Array): { seconds: number; nanos: number } {
  return (RetryInfo.toObject(RetryInfo.decode(value), { longs: Number, defaults: true }) as { retryDelay: { seconds: number; nanos: number } }).retryDelay;
}

const quota = new QuotaRefusal({ ok: false, limit: 'bytes', retryAfterMs: 1250, headers: { 'retry-after': '2' }, message: 'The source "s" is over its quota of 1000 bytes per second.' });

describe('the gRPC status of a refusal', () => {
  it('maps each refusal of the export core as the OTLP specification prescribes', () => {
    const cases: Array<[unknown, Code, number | undefined]> = [
      [new OtlpDecodeError('cannot decode the protobuf logs export request: index out of range'), Code.INVALID_ARGUMENT, undefined],
      [new FlattenLimitError('the flattened records are over 64 MiB'), Code.RESOURCE_EXHAUSTED, undefined],
      [new ApiError(413, 'bodyTooLarge', 'Too large.'), Code.RESOURCE_EXHAUSTED, undefined],
      [new ApiError(429, 'tooManyRequests', 'Too many OTLP request bytes.'), Code.RESOURCE_EXHAUSTED, 1000],
      [new LoggedRefusal(429, 'tooManyRequests', 'Sinks behind.'), Code.RESOURCE_EXHAUSTED, 1000],
      [quota, Code.RESOURCE_EXHAUSTED, 1250],
      [new ApiError(503, 'logFull', 'Log full.'), Code.UNAVAILABLE, 1000],
      [new EventLogFullError('full'), Code.UNAVAILABLE, 1000],
      [new ApiError(400, 'badRequest', 'Bad.'), Code.INVALID_ARGUMENT, undefined],
      [new ApiError(404, 'noSourceFound', 'None.'), Code.NOT_FOUND, undefined],
      [new ApiError(500, 'x', 'Broken.'), Code.INTERNAL, undefined],
      [new GrpcRefusal(Code.UNAUTHENTICATED, 'Who?'), Code.UNAUTHENTICATED, undefined],
      [new GrpcRefusal(Code.UNAVAILABLE, 'Stopping.', 1000), Code.UNAVAILABLE, 1000],
    ];
    for (const [err, code, retryAfterMs] of cases) {
      const refusal = refusalOf(err)!;
      expect(refusal.code, String(err)).toBe(code);
      expect(refusal.retryAfterMs, String(err)).toBe(retryAfterMs);
      expect(refusal.details.length, String(err)).toBeGreaterThan(0);
    }
    expect(refusalOf(new OtlpDecodeError('cannot decode it'))!.details).toBe('Cannot decode it.');
    expect(refusalOf(quota)!.details).toBe(quota.message);
    // Anything else is unexpected: the caller logs it and answers INTERNAL.
    expect(refusalOf(new TypeError('x is undefined'))).toBeUndefined();
  });

  it('carries a google.rpc.Status with the RetryInfo in grpc-status-details-bin only when the client may retry', () => {
    const status = statusOf({ code: Code.RESOURCE_EXHAUSTED, details: 'Over quota.', retryAfterMs: 2500 });
    expect(status).toMatchObject({ code: Code.RESOURCE_EXHAUSTED, details: 'Over quota.' });
    const [bin] = status.metadata.get('grpc-status-details-bin');
    expect(Buffer.isBuffer(bin)).toBe(true);
    const rpc = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(bin as Buffer), { defaults: true }) as { code: number; message: string; details: Array<{ type_url: string; value: Uint8Array }> };
    expect(rpc).toMatchObject({ code: Code.RESOURCE_EXHAUSTED, message: 'Over quota.' });
    expect(rpc.details).toHaveLength(1);
    expect(rpc.details[0].type_url).toBe('type.googleapis.com/google.rpc.RetryInfo');
    expect(delayOf(rpc.details[0].value)).toEqual({ seconds: 2, nanos: 500_000_000 });

    expect(statusOf({ code: Code.INVALID_ARGUMENT, details: 'Bad.' }).metadata.get('grpc-status-details-bin')).toEqual([]);
  });

  it('encodes RetryInfo delays exactly: whole seconds, milliseconds, zero', () => {
    expect(retryInfo(1000).typeUrl).toBe(RETRY_INFO_TYPE_URL);
    expect(delayOf(retryInfo(1000).value)).toEqual({ seconds: 1, nanos: 0 });
    expect(delayOf(retryInfo(1).value)).toEqual({ seconds: 0, nanos: 1_000_000 });
    expect(delayOf(retryInfo(86_400_123).value)).toEqual({ seconds: 86_400, nanos: 123_000_000 });
    expect(delayOf(retryInfo(0).value)).toEqual({ seconds: 0, nanos: 0 });
  });
});
