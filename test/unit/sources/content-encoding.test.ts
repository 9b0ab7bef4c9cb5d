import { deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { contentEncodingOf, decodeBody, isEncoded, SUPPORTED_ENCODINGS } from '../../../src/sources/ingest/content-encoding.js';
import { ApiError } from '../../../src/http/errors.js';

const text = Buffer.from('{"a":1}'.repeat(100));

async function refusal(p: Promise<unknown>): Promise<{ statusCode: number; message: string }> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('content encodings', () => {
  it('names encodings case-blind, with x-gzip as gzip and none as identity', () => {
    expect(contentEncodingOf(undefined)).toBe('identity');
    expect(contentEncodingOf(' GZIP ')).toBe('gzip');
    expect(contentEncodingOf('x-gzip')).toBe('gzip');
    expect(contentEncodingOf('Deflate')).toBe('deflate');
    expect(isEncoded(undefined)).toBe(false);
    expect(isEncoded('identity')).toBe(false);
    expect(isEncoded('gzip')).toBe(true);
    expect(isEncoded('br')).toBe(true);
  });

  it('refuses an unknown or stacked encoding with 415 naming the supported ones', () => {
    for (const header of ['br', 'gzip, deflate', 'compress']) {
      let err: unknown;
      try {
        contentEncodingOf(header);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ statusCode: 415, code: 'unsupportedMediaType' });
      expect((err as Error).message).toContain(`"${header}": use ${SUPPORTED_ENCODINGS.includes('zstd') ? 'gzip, deflate, zstd or identity' : 'gzip, deflate or identity'}`);
    }
  });

  it('inflates gzip, zlib deflate and raw deflate to the same bytes', async () => {
    expect(await decodeBody(gzipSync(text), 'gzip', 1 << 20)).toEqual(text);
    expect(await decodeBody(deflateSync(text), 'deflate', 1 << 20)).toEqual(text);
    expect(await decodeBody(deflateRawSync(text), 'deflate', 1 << 20)).toEqual(text);
    // Concatenated gzip members are one body (as gzip(1) writes them).
    expect(await decodeBody(Buffer.concat([gzipSync(text), gzipSync(text)]), 'gzip', 1 << 20)).toEqual(Buffer.concat([text, text]));
  });

  it('measures the limit after decompression, and before it for plain bodies', async () => {
    expect(await refusal(decodeBody(gzipSync(text), 'gzip', text.length - 1))).toMatchObject({ statusCode: 413, message: `Request body size is over the maximum "${text.length - 1}B" (measured after decompression).` });
    expect(await decodeBody(gzipSync(text), 'gzip', text.length)).toEqual(text);
    expect((await refusal(decodeBody(text, 'identity', 10))).statusCode).toBe(413);
  });

  it('stops a bomb at the limit', async () => {
    const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024));
    const external = process.memoryUsage().arrayBuffers;
    expect((await refusal(decodeBody(bomb, 'gzip', 1 << 20))).statusCode).toBe(413);
    // Stopped at the limit: the 256 MiB were never held (a regression to full inflation would be).
    expect(process.memoryUsage().arrayBuffers - external).toBeLessThan(64 * 1024 * 1024);
  });

  it('answers a body that does not inflate with 400 naming the encoding', async () => {
    expect(await refusal(decodeBody(Buffer.from('plain'), 'gzip', 1 << 20))).toMatchObject({ statusCode: 400, message: expect.stringMatching(/^The gzip body cannot be inflated: /) });
    expect(await refusal(decodeBody(gzipSync(text).subarray(0, 20), 'gzip', 1 << 20))).toMatchObject({ statusCode: 400 });
  });
});
