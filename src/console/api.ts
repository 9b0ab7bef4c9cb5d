/**
 * The console's only way to the server: the documented APIs on the same origin, with the
 * session's token in the X-StorageApi-Token header (never in a URL). An error answer becomes an
 * ApiError with the API's own message (each API family has its envelope); a 401 ends the session.
 */
import { session } from './session';
import type { Task } from '../contract/tasks';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** The message of an error answer in any of the envelopes: Stream {message}, Storage and Queue {error}. */
export function envelopeMessage(status: number, body: unknown, text: string): { message: string; code?: string } {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const message = typeof b.message === 'string' ? b.message : typeof b.error === 'string' && b.error.includes(' ') ? b.error : undefined;
    const code = typeof b.code === 'string' ? b.code : typeof b.error === 'string' && !b.error.includes(' ') ? b.error : undefined;
    if (message) return { message, code };
  }
  return { message: text.trim() || `HTTP ${status}` };
}

export interface RequestOptions {
  /** JSON body (sent as application/json). */
  json?: unknown;
  /** Raw body with its content type (default text/plain; '' sends none of its own). */
  body?: string | Blob;
  contentType?: string;
  /** More request headers (the test endpoint's sample); the session's token always wins. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

async function send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  const token = session.token();
  if (token) headers.set('X-StorageApi-Token', token);
  let body: string | Blob | undefined;
  if (options.json !== undefined) {
    headers.set('Content-Type', 'application/json');
    body = JSON.stringify(options.json);
  } else if (options.body !== undefined) {
    const type = options.contentType ?? 'text/plain';
    if (type) headers.set('Content-Type', type);
    body = options.body;
  }
  const res = await fetch(path, { method, headers, body, signal: options.signal });
  if (res.status === 401 && token) {
    session.end('Your token is no longer valid (it was deleted or has expired). Sign in again.');
  }
  return res;
}

async function fail(res: Response): Promise<never> {
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const { message, code } = envelopeMessage(res.status, parsed, text);
  throw new ApiError(res.status, message, code);
}

/** A JSON answer (undefined for an empty one). */
export async function api<T = any>(method: string, path: string, options?: RequestOptions): Promise<T> {
  const res = await send(method, path, options);
  if (!res.ok) return fail(res);
  const text = await res.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** A text answer (CSV previews, metrics). */
export async function apiText(method: string, path: string, options?: RequestOptions): Promise<string> {
  const res = await send(method, path, options);
  if (!res.ok) return fail(res);
  return res.text();
}

/**
 * A Stream API call that answers a task: waits for the task to end and returns it; a failed
 * task throws its error message.
 */
export async function runTask<T = any>(method: string, path: string, options?: RequestOptions): Promise<T> {
  let task = await api<Task>(method, path, options);
  const taskPath = new URL(task.url, location.href).pathname;
  for (let delay = 100; task.status === 'processing'; delay = Math.min(delay * 1.5, 1000)) {
    await new Promise((r) => setTimeout(r, delay));
    task = await api('GET', taskPath);
  }
  if (task.status !== 'success') throw new ApiError(400, task.error ?? `The task ended ${task.status}.`);
  return task as T;
}

/** The default branch in Stream API paths. */
export const BRANCH = '/v1/branches/default';
