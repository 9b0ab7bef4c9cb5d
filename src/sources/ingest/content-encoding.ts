/**
 * Compressed request bodies, the same on every ingestion path (single HTTP records, connector
 * batches, OTLP/HTTP): `Content-Encoding: gzip` (or `x-gzip`), `deflate` (zlib-wrapped as HTTP
 * says, or raw deflate as some clients send it), `zstd` where the runtime has it (Node ≥ 22.15),
 * or none/`identity`. The body is inflated on the thread pool, and the path's own size limit is
 * applied to the inflated bytes (OTLP 1.11: "after decompression"): the output stops at the
 * limit, so a small bomb is a 413 in milliseconds instead of filling memory. Anything else is a
 * 415 naming the encodings this node takes. The record stored is the inflated body.
 */
import * as zlib from 'node:zlib';
import { promisify } from 'node:util';
import { ApiError } from '../../http/errors.js';
import { formatByteLimit } from './envelope.js';

type Inflater = (body: Buffer, options: zlib.ZlibOptions) => Promise<Buffer>;

const gunzip: Inflater = promisify(zlib.gunzip);
const inflateZlib: Inflater = promisify(zlib.inflate);
const inflateRaw: Inflater = promisify(zlib.inflateRaw);
// zstd came to node:zlib in Node 22.15; on older runtimes the encoding is refused with 415.
const zstdDecompress = (zlib as { zstdDecompress?: typeof zlib.gunzip }).zstdDecompress;
const unzstd: Inflater | undefined = zstdDecompress ? (promisify(zstdDecompress) as Inflater) : undefined;

export type ContentEncoding = 'identity' | 'gzip' | 'deflate' | 'zstd';

/** The encodings this node inflates, in the order a 415 names them. */
export const SUPPORTED_ENCODINGS: readonly ContentEncoding[] = unzstd ? ['gzip', 'deflate', 'zstd', 'identity'] : ['gzip', 'deflate', 'identity'];

const ALIASES: Readonly<Record<string, ContentEncoding>> = {
  '': 'identity',
  identity: 'identity',
  gzip: 'gzip',
  'x-gzip': 'gzip',
  deflate: 'deflate',
  ...(unzstd ? { zstd: 'zstd' as const } : {}),
};

/** True when the request says its body is encoded (anything but none or identity). */
export function isEncoded(contentEncoding: string | undefined): boolean {
  return contentEncoding !== undefined && ALIASES[contentEncoding.trim().toLowerCase()] !== 'identity';
}

/** The request's encoding, or a 415 naming the supported ones. */
export function contentEncodingOf(header: string | undefined): ContentEncoding {
  const encoding = ALIASES[(header ?? '').trim().toLowerCase()];
  if (encoding) return encoding;
  const zstdHint = unzstd ? '' : ' (zstd needs Node.js 22.15 or later on the server)';
  throw new ApiError(415, 'unsupportedMediaType', `Unsupported Content-Encoding "${header}": use ${listOf(SUPPORTED_ENCODINGS)}${zstdHint}.`);
}

export function bodyTooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'bodyTooLarge', `Request body size is over the maximum "${formatByteLimit(maxBytes)}" (measured after decompression).`);
}

/**
 * The body as stored: inflated when encoded, at most `maxBytes` either way (413 above);
 * a body that does not inflate is a 400.
 */
export async function decodeBody(body: Buffer, encoding: ContentEncoding, maxBytes: number): Promise<Buffer> {
  if (encoding === 'identity') {
    if (body.length > maxBytes) throw bodyTooLarge(maxBytes);
    return body;
  }
  try {
    return await inflaterOf(encoding, body)(body, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) throw bodyTooLarge(maxBytes);
    throw new ApiError(400, 'badRequest', `The ${encoding} body cannot be inflated: ${(err as Error).message}.`);
  }
}

function inflaterOf(encoding: Exclude<ContentEncoding, 'identity'>, body: Buffer): Inflater {
  if (encoding === 'gzip') return gunzip;
  if (encoding === 'zstd') return unzstd as Inflater;
  return hasZlibHeader(body) ? inflateZlib : inflateRaw;
}

/** RFC 1950's two-byte header: method 8 (deflate), and the check bits making it a multiple of 31. */
function hasZlibHeader(body: Buffer): boolean {
  return body.length >= 2 && (body[0] & 0x0f) === 8 && (body[0] >> 4) <= 7 && ((body[0] << 8) | body[1]) % 31 === 0;
}

/** A request's body as stored (inflated when it was encoded) and the headers its records leave out. */
export interface DecodedBody {
  body: Buffer;
  omitHeaders?: ReadonlySet<string>;
}

/** Headers a decoded body no longer has: its encoding (the record's headers describe what is stored). */
export const ENCODING_HEADERS: ReadonlySet<string> = new Set(['Content-Encoding']);

function listOf(items: readonly string[]): string {
  return items.length === 1 ? items[0] : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
