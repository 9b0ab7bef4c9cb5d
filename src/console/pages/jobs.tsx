/** Jobs: to be built. */
import type { Route } from '../router';

export function JobsPage(_props: { route: Route }) {
  return <h1>Jobs</h1>;
}
