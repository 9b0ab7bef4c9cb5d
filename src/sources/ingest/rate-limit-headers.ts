/**
 * The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers, the structured-field
 * form): `RateLimit-Policy` names each quota of the source and its size over a one-second
 * window, `RateLimit` what is left of it now.
 *
 *   RateLimit-Policy: "records";q=100;w=1, "bytes";q=1048576;qu="content-bytes";w=1
 *   RateLimit: "records";r=0;t=1, "bytes";r=52000;t=1
 *
 * The draft's quota units are requests, content bytes and concurrent requests; a records quota
 * has no registered unit, so its policy's name says it (its `qu` is left out, as the draft's
 * own examples do). `r` is the whole tokens left in the bucket, `t` the seconds until the bucket
 * is full again (0 when it is).
 */

export type QuotaName = 'records' | 'bytes';

export interface QuotaPolicy {
  name: QuotaName;
  /** Units a second (the bucket's size: one second of the rate). */
  quota: number;
}

export interface QuotaState {
  name: QuotaName;
  remaining: number;
  /** Whole seconds until the bucket is full again. */
  resetSeconds: number;
}

/** The `RateLimit-Policy` value of a source's quotas (constant while they do not change). */
export function rateLimitPolicy(policies: readonly QuotaPolicy[]): string {
  return policies.map((p) => (p.name === 'bytes' ? `"bytes";q=${p.quota};qu="content-bytes";w=1` : `"${p.name}";q=${p.quota};w=1`)).join(', ');
}

/** The `RateLimit` value: what is left of each quota now. */
export function rateLimitState(states: readonly QuotaState[]): string {
  return states.map((s) => `"${s.name}";r=${s.remaining};t=${s.resetSeconds}`).join(', ');
}
