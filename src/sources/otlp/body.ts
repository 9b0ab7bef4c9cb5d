/**
 * The request body as bytes to decode: `Content-Encoding: gzip` is inflated, with the size
 * limit applied to the inflated bytes too (OTLP 1.11: "after decompression"), so a small
 * gzip bomb is refused with 413 instead of filling memory.
 */
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { ApiError } from '../../http/errors.js';
import { formatByteLimit } from '../http/index.js';

const gunzipAsync = promisify(gunzip);

export function bodyTooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'bodyTooLarge', `Request body size is over the maximum "${formatByteLimit(maxBytes)}" (measured after decompression).`);
}

/** The supported Content-Encodings: none, identity or gzip; anything else is refused with 415. */
export function isSupportedEncoding(contentEncoding: string | undefined): boolean {
  const e = (contentEncoding ?? '').trim().toLowerCase();
  return e === '' || e === 'identity' || e === 'gzip' || e === 'x-gzip';
}

export async function inflate(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  const e = (contentEncoding ?? '').trim().toLowerCase();
  if (e !== 'gzip' && e !== 'x-gzip') {
    if (body.length > maxBytes) throw bodyTooLarge(maxBytes);
    return body;
  }
  try {
    // Inflated on the thread pool; maxOutputLength stops it at the limit.
    return await gunzipAsync(body, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) throw bodyTooLarge(maxBytes);
    throw new ApiError(400, 'badRequest', `The gzip body cannot be inflated: ${(err as Error).message}.`);
  }
}
