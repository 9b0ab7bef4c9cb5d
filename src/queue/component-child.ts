/**
 * Entry of a component's worker process: waits for one "run" message, imports the component
 * from the registry, runs it with the job data directory, forwards its log lines, reports the
 * outcome and exits. The queue kills the process if it does not stop after an "abort".
 */
import { runnableComponent } from '../components/registry.js';
import { UserError } from '../components/contract.js';
import type { ChildMessage, ParentMessage } from './component-protocol.js';

type RunMessage = Extract<ParentMessage, { type: 'run' }>;

const controller = new AbortController();

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

async function run({ componentId, dataDir, config, state }: RunMessage): Promise<void> {
  const entry = runnableComponent(componentId);
  if (!entry) {
    await send({ type: 'failed', kind: 'application', message: `The component "${componentId}" is not runnable.` });
    return;
  }
  try {
    const { component } = await entry.load();
    const result = await component.run({
      dataDir,
      config,
      state,
      signal: controller.signal,
      log: (message, level = 'info') => void send({ type: 'log', message: String(message), level }),
    });
    await send({ type: 'done', message: result?.message, counters: result?.counters });
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    const isUser = err instanceof UserError || e.name === 'UserError';
    await send({ type: 'failed', kind: isUser ? 'user' : 'application', message: e.message, stack: e.stack });
  }
}

process.on('message', (msg: ParentMessage) => {
  if (msg.type === 'abort') {
    controller.abort(new Error('The job was killed.'));
  } else if (msg.type === 'run') {
    void run(msg).finally(() => {
      // Exit even if the component left timers or sockets open.
      process.disconnect?.();
      process.exit(0);
    });
  }
});
// The parent went away (API process died): nothing left to report to.
process.on('disconnect', () => process.exit(1));
