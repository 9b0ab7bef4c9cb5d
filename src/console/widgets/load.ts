/**
 * Data for a page: loaded once, or polled with a backoff while the page is open (live updates
 * without reloading), and loaded again on demand after a write.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  reload: () => Promise<void>;
}

/**
 * `intervalMs`: poll that often while the tab is visible; after a failed load the wait doubles
 * (up to a minute) until a load succeeds again.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], intervalMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    try {
      setData(await loadRef.current());
      setError(undefined);
    } catch (err) {
      setError(err);
      throw err;
    }
  }, []);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let wait = intervalMs ?? 0;
    const tick = async () => {
      if (stopped) return;
      if (document.visibilityState === 'visible' || data === undefined) {
        try {
          await reload();
          wait = intervalMs ?? 0;
        } catch {
          wait = Math.min(Math.max(wait * 2, 2000), 60_000);
        }
      }
      if (!stopped && intervalMs) timer = setTimeout(tick, wait);
    };
    setData(undefined);
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, deps);
  return { data, error, reload };
}
