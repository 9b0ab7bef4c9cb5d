/** The Sluice web console: one page, hash routes, the documented APIs only. */
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { session } from './session';
import { useRoute } from './router';
import { Layout } from './widgets/layout';
import { SignIn } from './pages/sign-in';
import { PAGES, NotFound } from './pages/index';

function App() {
  const [, setVersion] = useState(0);
  useEffect(() => session.onChange(() => setVersion((v) => v + 1)), []);
  const route = useRoute();
  if (!session.token()) return <SignIn />;
  const [section = 'sources'] = route.parts;
  const Page = PAGES[section] ?? NotFound;
  return (
    <Layout section={section}>
      <Page route={route} />
    </Layout>
  );
}

render(<App />, document.getElementById('app')!);
