/**
 * `sluice wait`: reads the answer of a Stream API write on stdin (a task: creating, updating or
 * deleting a source or sink is asynchronous) and waits until the task is finished, so that a
 * script's next call sees what it made: `curl -s -X POST .../sinks ... | npx sluice wait`.
 * An answer that holds several tasks (an OTLP source's default sinks: one per sink) waits for
 * each. Prints `<task type>: success` per task (exit 0), or a task's error (exit 1); an answer
 * that holds no task (an error envelope) is printed as it came, with exit 1.
 */
import { parseCommandLine } from './args.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from './client.js';
import { CliError, reportErrors, type CliIo } from './errors.js';
import { parseDuration } from '../pipeline/units.js';
import { waitForTask, type Task } from './tasks.js';

export const WAIT_USAGE = `Usage: <a Stream API write> | sluice wait [options]

Reads the answer of a Stream API write on standard input (creating, updating or deleting a
source or sink answers with a task; an OTLP source's default sinks with one per sink) and waits
until each task is finished: prints "<task type>: success" per task and exits 0, or prints a
task's error and exits 1. An answer that holds no task (an error) is printed as it came, with
exit code 1.

  curl -s -X POST $API/v1/branches/default/sources ... | npx sluice wait

Options:
  --timeout <duration>  give up after this long, exit 1 (default 60s; 500ms, 2m, ...)
  --help                this message

${CONNECTION_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;


export interface WaitIo extends CliIo {
  stdin: AsyncIterable<Buffer | string>;
}

export async function runWaitCli(argv: string[], io: WaitIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const { values, positionals } = parseCommandLine('wait', argv, OPTIONS);
    if (values.help) {
      io.stdout.write(WAIT_USAGE);
      return 0;
    }
    if (positionals.length > 0) throw new CliError(`"sluice wait" takes the task on standard input, not "${positionals[0]}" (see "sluice wait --help")`, 2);
    const timeoutMs = values.timeout === undefined ? 60_000 : parseDuration(values.timeout);
    if (timeoutMs === undefined || timeoutMs <= 0) throw new CliError(`--timeout must be a duration such as 30s or 2m, got "${values.timeout}"`, 2);
    const text = await readAll(io.stdin);
    const tasks = tasksOf(text);
    if (tasks.length === 0) {
      // Not a task: most often the write's error envelope. Show it as it came.
      io.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
      if (text.trim() === '') io.stderr.write('sluice: nothing on standard input; pipe the answer of a Stream API write into "sluice wait"\n');
      return 1;
    }
    const client = new StorageClient(resolveConnection(values, io.env));
    const deadline = Date.now() + timeoutMs;
    let failed = 0;
    for (const answered of tasks) {
      const task = await waitForTask(client, answered, Math.max(0, deadline - Date.now()), (t, path) =>
        `the task ${t.taskId} is still ${t.status} after ${timeoutMs / 1000} s (GET ${path} shows it)`);
      if (task.status !== 'success') failed++;
      io.stdout.write(`${task.type}: ${task.status}${task.status !== 'success' && task.error ? `: ${task.error}` : ''}\n`);
    }
    return failed === 0 ? 0 : 1;
  });
}

async function readAll(stdin: AsyncIterable<Buffer | string>): Promise<string> {
  let text = '';
  for await (const chunk of stdin) text += chunk.toString();
  return text;
}

/** Every task in the answer, in document order: the answer itself, or tasks nested in it. */
function tasksOf(text: string): Task[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const found: Task[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (depth > 8 || value === null || typeof value !== 'object') return;
    const t = value as Partial<Task>;
    if (typeof t.taskId === 'string' && typeof t.url === 'string' && typeof t.isFinished === 'boolean') {
      found.push(t as Task);
      return;
    }
    for (const child of Object.values(value)) visit(child, depth + 1);
  };
  visit(parsed, 0);
  return found;
}
