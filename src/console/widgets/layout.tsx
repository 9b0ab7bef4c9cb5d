/** The frame of every page: the product name, the main navigation, who is signed in. */
import type { ComponentChildren } from 'preact';
import { session } from '../session';
import { href } from '../router';

const SECTIONS: { id: string; label: string }[] = [
  { id: 'sources', label: 'Sources' },
  { id: 'tables', label: 'Tables' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'configurations', label: 'Configurations' },
  { id: 'tokens', label: 'Tokens' },
];

export function Layout({ section, children }: { section: string; children: ComponentChildren }) {
  const info = session.info();
  return (
    <>
      <header class="top">
        <a class="brand" href={href('sources')}>Sluice</a>
        <nav class="main" aria-label="Main">
          {SECTIONS.map((s) => (
            <a key={s.id} href={href(s.id)} aria-current={section === s.id ? 'page' : undefined}>{s.label}</a>
          ))}
        </nav>
        <div class="who">
          <a href="/v1/documentation/" title="The OpenAPI documentation of every endpoint">API docs</a>
          <span>{info?.description ?? 'token'}</span>
          {!session.canWrite() && <span class="badge off" title="This token can read, not change">read-only</span>}
          <button type="button" class="small" onClick={() => session.end()}>Sign out</button>
        </div>
      </header>
      <main id="content">{children}</main>
    </>
  );
}
