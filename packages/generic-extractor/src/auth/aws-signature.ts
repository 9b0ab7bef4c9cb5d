/**
 * AWS request signing (`parameters.aws.signature`): every request the extractor sends is signed
 * with AWS Signature Version 4, as the reference's Guzzle middleware (aws-sdk-php SignatureV4)
 * does, for APIs behind AWS IAM authentication (API Gateway, OpenSearch, ...). The signing
 * itself is the `aws4` library's; this module reads the configuration and adapts the request.
 */
import aws4 from 'aws4';
import { UserError } from '../errors.js';
import type { PreparedRequest } from '../http/request.js';

export interface AwsSignature {
  accessKeyId: string;
  secretKey: string;
  serviceName: string;
  regionName: string;
}

const FIELDS = ['accessKeyId', '#secretKey', 'serviceName', 'regionName'] as const;

/** `parameters.aws` of config.json: undefined when absent; a clear error when incomplete. */
export function parseAwsSignature(aws: unknown): AwsSignature | undefined {
  if (aws === undefined) return undefined;
  const credentials = (aws as { signature?: { credentials?: unknown } } | null)?.signature?.credentials;
  if (typeof credentials !== 'object' || credentials === null) {
    throw new UserError('Invalid configuration: parameters.aws.signature.credentials must be an object with accessKeyId, #secretKey, serviceName and regionName');
  }
  const given = credentials as Record<string, unknown>;
  for (const field of FIELDS) {
    if (typeof given[field] !== 'string' || given[field] === '') {
      throw new UserError(`Invalid configuration: parameters.aws.signature.credentials.${field} must be a non-empty string`);
    }
  }
  return {
    accessKeyId: given.accessKeyId as string,
    secretKey: given['#secretKey'] as string,
    serviceName: given.serviceName as string,
    regionName: given.regionName as string,
  };
}

/**
 * The request's headers with the signature added (`Authorization`, `X-Amz-Date`, and the
 * `Host` and body headers it covers). Signed per attempt: a signature is valid for 15 minutes,
 * and a retry may come later than that.
 */
export function signedHeaders(req: PreparedRequest, aws: AwsSignature, now: Date = new Date()): Record<string, string> {
  const url = new URL(req.url);
  const headers: Record<string, string> = { ...req.headers, 'X-Amz-Date': amzDate(now) };
  const signed = aws4.sign(
    { host: url.host, path: url.pathname + url.search, method: req.method, headers, body: req.body, service: aws.serviceName, region: aws.regionName },
    { accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretKey },
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers ?? {})) if (value !== undefined) out[name] = String(value);
  return out;
}

/** "20150830T123600Z": the basic ISO format SigV4 dates are written in. */
function amzDate(now: Date): string {
  return now.toISOString().replace(/[:-]|\.\d{3}/g, '');
}
