/**
 * Runs one job to its end: resolve what to run (configuration, rows, variables), hand each
 * resolved configuration to the component in its own process, load the output tables, and
 * store the outcome. Every failure ends the job with a status and a message; nothing escapes.
 *
 * The `#` values stay encrypted through resolution (variables are rendered
 * first, then the values decrypted) and in the job directory's files; they are decrypted only
 * into the message that hands the configuration and state to the component's process, and the
 * component's log lines and messages have them masked.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { ConfigurationService } from '../storage/configurations/service.js';
import type { EventService } from '../storage/events.js';
import type { TableService } from '../storage/tables.js';
import { SecretUnavailableError, type Secrets } from '../storage/secrets.js';
import { redactSecrets } from '../model/secret-values.js';
import { isExpired, type TokenService } from '../storage/tokens.js';
import type { Token } from '../storage/token-model.js';
import { canReadComponent } from '../storage/configurations/permissions.js';
import { UserError } from '../components/contract.js';
import { runComponentProcess } from './component-process.js';
import { jobDefinitions, type JsonObject } from './job-definitions.js';
import { JobLog } from './job-log.js';
import { INTERRUPTED, type Job, type JobResult } from './job-model.js';
import type { JobService } from './job-service.js';
import { loadOutputTables, type LoadedTable } from './output-tables.js';
import type { ReplacedValue } from './mustache-renderer.js';
import { resolveVariables, VARIABLES_COMPONENT, VariableResolutionError, type VariablesStore } from './variables.js';
import type { Metrics } from '../observability/metrics.js';
import { runnableComponent } from '../components/registry.js';
import { JobRunnerEvents } from './events.js';

export interface JobRunnerDeps {
  jobs: JobService;
  configurations: ConfigurationService;
  events: EventService;
  tables: TableService;
  /** Decrypts the `#` values for the component's process. */
  secrets: Secrets;
  /** The job runs with the rights of the token that created it (job.token). */
  tokens: Pick<TokenService, 'get'>;
  dataDir: string;
  logger: Logger;
  /** Jobs by component and status, their run time, the extractor's pages and items. */
  metrics?: Metrics;
}

/** Raised when the job is killed while it runs. */
class Killed extends Error {}

/** `exception-<md5>` as the reference's error ids look. */
function exceptionId(seed: string): string {
  return 'exception-' + createHash('md5').update(seed + Math.random()).digest('hex');
}

export class JobRunner {
  private readonly events: JobRunnerEvents;

  constructor(private readonly deps: JobRunnerDeps) {
    this.events = new JobRunnerEvents(deps.logger, deps.metrics);
  }

  /** Runs a job that is created or waiting; resolves when it is finished and stored. */
  async run(jobId: string, signal: AbortSignal): Promise<void> {
    const { jobs } = this.deps;
    let job: Job;
    try {
      job = jobs.transition(jobId, 'processing', { startTime: new Date().toISOString() });
    } catch (err) {
      // Killed (cancelled) between scheduling and start: nothing to run.
      this.events.notStarted(jobId, err);
      return;
    }
    const log = new JobLog(this.deps.events, { runId: job.runId, configId: job.config, componentId: job.component });
    const jobDir = join(this.deps.dataDir, 'jobs', job.id);
    let status: 'success' | 'error' | 'terminated';
    let result: JobResult;
    try {
      result = await this.execute(job, jobDir, log, signal);
      status = 'success';
    } catch (err) {
      if ((err instanceof Killed || signal.aborted) && jobs.get(job.id)?.status === 'terminating') {
        status = 'terminated';
        result = { message: 'Job was terminated.' };
        log.runner(`Job "${job.id}" was terminated.`, 'warning');
      } else if (err instanceof Killed || signal.aborted) {
        // Aborted without a kill request: the service is stopping, and the job cannot resume later.
        status = 'error';
        result = { message: INTERRUPTED, error: { type: 'application', exceptionId: exceptionId(job.id) } };
        log.runner(`Job "${job.id}" was interrupted: the service is stopping.`, 'error');
      } else if (err instanceof UserError || err instanceof VariableResolutionError || err instanceof SecretUnavailableError) {
        status = 'error';
        result = { message: err.message, error: { type: 'user', exceptionId: exceptionId(job.id) } };
        log.runner(`Job "${job.id}" ended with user error: "${err.message}"`, 'error');
      } else {
        status = 'error';
        const id = exceptionId(job.id);
        result = { message: 'Internal Server Error occurred.', error: { type: 'application', exceptionId: id } };
        const detail = err instanceof Error ? err.message : String(err);
        log.runner(`Job "${job.id}" ended with application error (${id}): ${detail}`, 'error');
        this.events.applicationError(job.id, id, err);
      }
    }
    await rm(jobDir, { recursive: true, force: true }).catch(() => undefined);
    const end = new Date();
    const processingMs = job.processingMs + Math.max(0, end.getTime() - Date.parse(job.startTime ?? end.toISOString()));
    log.flush();
    // A component id only when it is a runnable one: the label stays bounded whatever a request names.
    const component = runnableComponent(job.component) ? job.component : 'other';
    this.events.finished(component, status, processingMs);
    try {
      jobs.transition(job.id, status, { endTime: end.toISOString(), processingMs, result });
    } catch (err) {
      // A kill may have come after the component finished: the job still ends, as terminated.
      if (jobs.get(job.id)?.status === 'terminating') {
        jobs.transition(job.id, 'terminated', { endTime: end.toISOString(), processingMs, result: { message: 'Job was terminated.' } });
      } else {
        this.events.endNotStored(job.id, err);
      }
    }
  }

  private async execute(job: Job, jobDir: string, log: JobLog, signal: AbortSignal): Promise<JobResult> {
    const { configurations } = this.deps;
    const token = this.tokenOf(job);
    const config = job.config !== null ? configurations.find(job.component, job.config) : undefined;
    if (job.configData === null && !config) throw new UserError(`Configuration "${job.config}" not found`);
    const definitions = jobDefinitions(config, job.configData, job.configRowIds);
    if (definitions.length === 0) {
      log.runner('No configurations executed.');
      return { message: 'No configurations executed.', configVersion: config ? String(config.current.version) : undefined };
    }

    // Every definition is resolved before anything runs: a variables error runs nothing.
    const resolved = definitions.map((d) => {
      const r = resolveVariables({
        configuration: d.configuration,
        variableValuesId: job.variableValuesId,
        variableValuesData: job.variableValuesData,
      }, this.variablesStore(token));
      for (const m of r.messages) log.runner(m);
      return { ...d, configuration: r.configuration, replaced: r.replaced };
    });
    // A value that cannot be decrypted (another key, no key) fails the job before anything runs.
    for (const def of resolved) this.reveal(def);

    const output: LoadedTable[] = [];
    const variables: ReplacedValue[] = [];
    // The contract's default (src/components/contract.ts).
    let message = 'Component finished';
    for (const def of resolved) {
      if (signal.aborted) throw new Killed();
      for (const v of def.replaced) if (!variables.some((x) => x.name === v.name)) variables.push(v);
      await rm(jobDir, { recursive: true, force: true });
      await mkdir(join(jobDir, 'out', 'tables'), { recursive: true });
      await mkdir(join(jobDir, 'in', 'tables'), { recursive: true });
      await writeFile(join(jobDir, 'config.json'), JSON.stringify(def.configuration));
      if (Object.keys(def.state).length > 0) await writeFile(join(jobDir, 'in', 'state.json'), JSON.stringify(def.state));

      const revealed = new Set<string>();
      const hide = (text: string) => redactSecrets(text, revealed);
      const outcome = await runComponentProcess({
        componentId: job.component,
        dataDir: jobDir,
        ...this.reveal(def, revealed),
        signal,
        onLog: (line, level) => log.component(hide(line), level),
      });
      if (outcome.kind === 'killed') throw new Killed();
      if (outcome.kind === 'failed') {
        if (outcome.errorType === 'user') throw new UserError(hide(outcome.message));
        throw new Error(hide(outcome.message + (outcome.detail ? `\n${outcome.detail}` : '')));
      }
      if (outcome.message) message = hide(outcome.message);
      this.events.extracted(outcome.counters);
      output.push(...await loadOutputTables({
        jobDir, tables: this.deps.tables, componentId: job.component, configId: job.config, token, signal,
      }));
      await this.saveState(job, def.rowId, jobDir);
    }
    if (signal.aborted) throw new Killed();
    for (const table of output) log.runner(`Table "${table.id}" loaded: ${table.rows} rows.`);
    return {
      message,
      configVersion: config ? String(config.current.version) : undefined,
      images: [],
      input: { tables: [] },
      output: { tables: output },
      ...(variables.length > 0 ? { variables } : {}),
    };
  }

  /** The configuration and state with their `#` values decrypted; each plain value into `revealed`. */
  private reveal(def: { configuration: JsonObject; state: JsonObject }, revealed?: Set<string>): { config: JsonObject; state: JsonObject } {
    const { secrets } = this.deps;
    return { config: secrets.reveal(def.configuration, 'configuration', revealed), state: secrets.reveal(def.state, 'state', revealed) };
  }

  /**
   * A component's `out/state.json` becomes the configuration's (or row's) state `component`
   * (its `#` values encrypted by the configuration service, as the reference's runner does).
   */
  private async saveState(job: Job, rowId: string | null, jobDir: string): Promise<void> {
    if (job.config === null || job.configData !== null) return;
    let text: string;
    try {
      text = await readFile(join(jobDir, 'out', 'state.json'), 'utf8');
    } catch {
      return;
    }
    let state: JsonObject;
    try {
      state = JSON.parse(text) as JsonObject;
    } catch (err) {
      throw new UserError(`The component's out/state.json is not valid JSON: ${(err as Error).message}`);
    }
    const configs = this.deps.configurations;
    if (rowId === null) configs.updateState(job.component, job.config, { component: state });
    else configs.updateRowState(job.component, job.config, rowId, { component: state });
  }

  /**
   * The token that created the job, as it is now: the job has its rights (its output tables, the
   * variables it reads). A token deleted or expired since leaves the job none.
   */
  private tokenOf(job: Job): Token {
    const token = this.deps.tokens.get(job.token.id);
    if (!token || isExpired(token)) {
      throw new UserError(`The token "${job.token.description}" (id ${job.token.id}) that created the job has been deleted or has expired: the job runs with its rights, so it cannot run.`);
    }
    return token;
  }

  /** The variables are read with the job's token: without access to keboola.variables, none. */
  private variablesStore(token: Token): VariablesStore {
    const configs = this.deps.configurations;
    const readable = () => {
      if (!canReadComponent(token, VARIABLES_COMPONENT)) {
        throw new VariableResolutionError(`Variable configuration cannot be read: the token that created the job has no access to the component "${VARIABLES_COMPONENT}".`);
      }
    };
    return {
      variablesConfiguration: (id) => {
        readable();
        return configs.find(VARIABLES_COMPONENT, id)?.configuration;
      },
      valuesRow: (variablesId, rowId) => configs.findRow(VARIABLES_COMPONENT, variablesId, rowId)?.configuration,
    };
  }
}
