/**
 * Examples of the generic extractor suite that are not run, by name, each with its reason: only
 * those that need infrastructure this machine cannot provide. The examples that depend on the
 * time or on random nonces run under the recordings' clock and random values (recordings.ts);
 * those behind the reference's TLS proxies (141, 142) run behind a local HTTPS front with the
 * certificates the examples ship; 143 signs its requests with AWS Signature V4.
 */
const INFRA = 'needs infrastructure that is not on this machine';

export const SKIPPED: ReadonlyMap<string, string> = new Map([
  ['131-ssh-tunnel', `${INFRA} (an SSH server to tunnel through; sshProxy is not supported)`],
  ['133-ssh-tunnel-iterations-params', `${INFRA} (an SSH server to tunnel through; sshProxy is not supported)`],
]);
