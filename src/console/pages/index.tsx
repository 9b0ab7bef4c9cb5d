/** The pages by the first segment of the route. Each page gets the whole route. */
import type { FunctionComponent } from 'preact';
import type { Route } from '../router';
import { SourcesPage } from './sources';
import { TablesPage } from './tables';
import { JobsPage } from './jobs';
import { ConfigurationsPage } from './configurations';
import { TokensPage } from './tokens';

export type PageComponent = FunctionComponent<{ route: Route }>;

export const PAGES: Record<string, PageComponent> = {
  sources: SourcesPage,
  tables: TablesPage,
  jobs: JobsPage,
  configurations: ConfigurationsPage,
  tokens: TokensPage,
};

export function NotFound() {
  return <p>This page does not exist. <a href="#/sources">Back to the sources</a>.</p>;
}
