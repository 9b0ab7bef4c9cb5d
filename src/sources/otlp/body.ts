/**
 * The OTLP request body as bytes to decode: inflated as every ingestion path inflates
 * (sources/ingest/content-encoding.ts: gzip, deflate, zstd where the runtime has it), with the
 * size limit applied to the inflated bytes too (OTLP 1.11: "after decompression").
 */
import { bodyTooLarge, contentEncodingOf, decodeBody } from '../ingest/content-encoding.js';

export { bodyTooLarge };

/** The inflated body; 415 for an unknown encoding, 413 past `maxBytes`, 400 when it does not inflate. */
export function inflate(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  return decodeBody(body, contentEncodingOf(contentEncoding), maxBytes);
}
