/** Small pieces every page uses: times, copy buttons, error text, labelled fields, loading. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { session } from '../session';

/** A time in the browser's zone; UTC (ISO) on hover. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const date = new Date(iso.replace(/\+0000$/, 'Z'));
  if (Number.isNaN(date.getTime())) return <span>{iso}</span>;
  return <time dateTime={date.toISOString()} title={`${date.toISOString()} (UTC)`}>{date.toLocaleString()}</time>;
}

/** Copies `text` to the clipboard; says so for a moment. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // A page without clipboard access (http on another host): select-and-copy fallback.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setDone(true);
    setTimeout(() => setDone(false), 1500);
  };
  return (
    <button type="button" class="small copy" onClick={copy} aria-label={`Copy ${label}`} title={`Copy ${label}`}>
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

/** An API error, next to the control that caused it (announced to screen readers). */
export function ErrorText({ error, id }: { error: unknown; id?: string }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return <p class="error" role="alert" id={id}>{message}</p>;
}

/** A labelled control with a hint and the error of its last action. */
export function Field({ label, hint, error, children }: { label: string; hint?: string; error?: unknown; children: ComponentChildren }) {
  return (
    <label class="field">
      {label}
      {hint && <span class="hint">{hint}</span>}
      {children}
      <ErrorText error={error} />
    </label>
  );
}

/** Only for tokens that may write (the master token): a read-only token sees no write buttons. */
export function WriteOnly({ children }: { children: ComponentChildren }) {
  return session.canWrite() ? <>{children}</> : null;
}

/** A button that runs an action, disables itself meanwhile, and shows the action's error beside it. */
export function ActionButton(props: { onAction: () => Promise<unknown>; children: ComponentChildren; class?: string; confirm?: string; label?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const click = async (event: Event) => {
    event.preventDefault();
    if (props.confirm && !confirm(props.confirm)) return;
    setBusy(true);
    setError(undefined);
    try {
      await props.onAction();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span>
      <button type="button" class={props.class} disabled={busy} onClick={click} aria-label={props.label}>{props.children}</button>
      <ErrorText error={error} />
    </span>
  );
}

export function Loading() {
  return <p class="muted" aria-live="polite">Loading…</p>;
}

export function formatCount(n: number | undefined): string {
  return n === undefined ? '—' : n.toLocaleString();
}

/** "1 row", "2 rows", "— rows": a count with its noun. */
export function countOf(n: number | undefined, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}

export function formatBytes(n: number | undefined): string {
  if (n === undefined) return '—';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}
