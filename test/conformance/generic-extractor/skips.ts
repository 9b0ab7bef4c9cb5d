/**
 * Examples of the generic extractor suite that are not run, by name, each with its reason.
 * Exactly the ones FORMAT.md excludes; everything else runs (and fails visibly if unsupported).
 */
const INFRA = 'needs infrastructure that is not on this machine';
const CLOCK = 'output depends on the current time or randomness';

export const SKIPPED: ReadonlyMap<string, string> = new Map([
  ['131-ssh-tunnel', `${INFRA} (SSH tunnel)`],
  ['133-ssh-tunnel-iterations-params', `${INFRA} (SSH tunnel)`],
  ['141-https-self-signed', `${INFRA} (TLS proxy with a self-signed certificate)`],
  ['142-https-client-cert', `${INFRA} (TLS client certificate)`],
  ['143-aws-signature-request', `${INFRA} (AWS request signing)`],
  ['091-function-user-data', CLOCK],
  ['102-oauth1', CLOCK],
  ['104-oauth2-hmac', CLOCK],
  ['109-incremental-load-from-to', CLOCK],
  ['110-incremental-relative', CLOCK],
]);
