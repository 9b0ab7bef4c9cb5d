/**
 * The signed-in token: kept in sessionStorage (this tab only, gone when it closes), never in a
 * URL or a log. What the token may do comes from GET /v2/storage/tokens/verify, whose answer
 * (the API contract's TokenJson) is kept as it came.
 */
import type { TokenJson } from '../contract/storage-tokens';

const TOKEN_KEY = 'sluice.token';
const INFO_KEY = 'sluice.tokenInfo';
const MESSAGE_KEY = 'sluice.signInMessage';

type Listener = () => void;
const listeners = new Set<Listener>();

export const session = {
  token(): string | undefined {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  },
  info(): TokenJson | undefined {
    const raw = sessionStorage.getItem(INFO_KEY);
    return raw ? (JSON.parse(raw) as TokenJson) : undefined;
  },
  /** Verifies the token with the server, then keeps it. Throws the server's message. */
  async start(token: string): Promise<void> {
    const res = await fetch('/v2/storage/tokens/verify', { headers: { 'X-StorageApi-Token': token } });
    const body = await res.json().catch(() => undefined);
    if (!res.ok) throw new Error((body as { error?: string } | undefined)?.error ?? `The token was refused (HTTP ${res.status}).`);
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(INFO_KEY, JSON.stringify(body));
    sessionStorage.removeItem(MESSAGE_KEY);
    listeners.forEach((l) => l());
  },
  /** Ends the session; `message` is shown on the sign-in page. */
  end(message?: string): void {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(INFO_KEY);
    if (message) sessionStorage.setItem(MESSAGE_KEY, message);
    listeners.forEach((l) => l());
  },
  /** The message of the last ended session, shown once at sign-in. */
  endMessage(): string | undefined {
    return sessionStorage.getItem(MESSAGE_KEY) ?? undefined;
  },
  onChange(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  /** Stream API writes, job runs and configurations need the master token (the API refuses others). */
  canWrite(): boolean {
    return this.info()?.isMasterToken === true;
  },
  canManageTokens(): boolean {
    return this.info()?.canManageTokens === true;
  },
};
