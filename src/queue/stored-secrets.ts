/**
 * One pass over every stored `#` value (configurations, rows, versions, state, jobs'
 * `configData`): at start, the values saved before encryption existed are encrypted; a key
 * rotation re-encrypts the rest with the new key (`sluice secrets rotate-key`).
 */
import type { ConfigurationService } from '../storage/configurations/service.js';
import type { ResealCount, ResealMode, Secrets } from '../storage/secrets.js';
import type { JobService } from './job-service.js';

export interface StoredSecretsPass extends ResealCount {
  /** Configurations, rows, versions and jobs rewritten (none when not applied). */
  entries: number;
}

/**
 * Re-encrypts as `mode` says; with `apply` false only counts (what a rotation would change,
 * what it cannot read), writing nothing.
 */
export function resealStoredSecrets(
  stores: { configurations: Pick<ConfigurationService, 'rewriteSecrets'>; jobs: Pick<JobService, 'rewriteSecrets'> },
  secrets: Secrets,
  mode: ResealMode,
  apply = true,
): StoredSecretsPass {
  const count: ResealCount = { encrypted: 0, unreadable: [] };
  const fn = <T>(value: T, label: string): T => secrets.reseal(value, label, mode, count);
  const entries = stores.configurations.rewriteSecrets(fn, apply) + stores.jobs.rewriteSecrets(fn, apply);
  return { ...count, entries };
}
