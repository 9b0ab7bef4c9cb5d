/**
 * What the development tools' background servers (the Kafka broker, PostgreSQL) share: whether
 * a pid lives, ending one and waiting for its exit, and loopback ports.
 */
import { createServer } from 'node:net';

/** True while `pid` exists (EPERM: it exists, as another user's process, e.g. nobody's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends `signal`, waits up to `graceMs` for the exit, then sends `last` and waits for the exit. */
export async function endProcess(pid: number, signal: NodeJS.Signals, graceMs: number, last: NodeJS.Signals): Promise<void> {
  process.kill(pid, signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    process.kill(pid, last);
    while (isAlive(pid)) await sleep(50);
  }
}

/** A port that was free on `host` a moment ago. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export function isFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.on('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
