/**
 * Examples of the generic extractor suite that are not run, by name, each with its reason: only
 * those that need infrastructure this machine cannot provide. The examples that depend on the
 * time or on random nonces run under the recordings' clock and random values (recordings.ts);
 * those behind the reference's TLS proxies (141, 142) run behind a local HTTPS front with the
 * certificates the examples ship; 143 signs its requests with AWS Signature V4; 131 and 133 tunnel
 * through a local SSH server (ssh-proxy.ts). None is skipped now; the map stays for an example
 * that cannot run here, with its reason.
 */
export const SKIPPED: ReadonlyMap<string, string> = new Map([]);
