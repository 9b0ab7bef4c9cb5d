/**
 * Hash routes (`#/sources/my-source`): the console is one static page; the path after `#` names
 * the page and its ids. No token ever goes into the URL.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** The path segments after `#/`, decoded. */
  parts: string[];
  /** The query after `?` in the hash. */
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** The href of a route: href('sources', id) -> '#/sources/<id>'. */
export function href(...parts: (string | number)[]): string {
  return '#/' + parts.map((p) => encodeURIComponent(String(p))).join('/');
}

export function go(...parts: (string | number)[]): void {
  location.hash = href(...parts);
}
