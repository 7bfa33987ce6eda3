import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { session, tryToken, whenUnauthorized } from './api.ts';
import { Clients, Overview, Payments, Rates, Reconciliation, Webhooks } from './pages.tsx';

/** The operator console: a login with the admin token, then one page per concern, routed by the URL's hash. */

const PAGES = {
  overview: { title: 'Overview', page: Overview },
  clients: { title: 'Clients', page: Clients },
  payments: { title: 'Payments', page: Payments },
  reconciliation: { title: 'Reconciliation', page: Reconciliation },
  webhooks: { title: 'Webhooks', page: Webhooks },
  rates: { title: 'Rates & quotes', page: Rates },
} as const;
type PageName = keyof typeof PAGES;

const pageOf = (hash: string): PageName => {
  const name = hash.replace(/^#\/?/, '');
  return name in PAGES ? (name as PageName) : 'overview';
};

function Login({ onIn }: { onIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      class="login"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await tryToken(token)) {
          session.set(token);
          onIn();
        } else setError('That token was refused.');
      }}
    >
      <h1>dispersa console</h1>
      <label>
        Admin token
        <input
          type="password"
          name="token"
          autocomplete="off"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
      </label>
      <button type="submit">Sign in</button>
      {error && <p class="error">{error}</p>}
      <p class="hint">
        DISPERSA_ADMIN_TOKEN, or on a sandbox the token in the data dir's admin-token file. It is kept in this tab only.
      </p>
    </form>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(session.token() !== null);
  const [page, setPage] = useState<PageName>(pageOf(location.hash));
  useEffect(() => {
    whenUnauthorized(() => {
      session.clear();
      setSignedIn(false);
    });
    const onHash = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  if (!signedIn) return <Login onIn={() => setSignedIn(true)} />;
  const Page = PAGES[page].page;
  return (
    <>
      <header>
        <strong>dispersa</strong>
        <nav>
          {(Object.keys(PAGES) as PageName[]).map((name) => (
            <a key={name} href={`#/${name}`} class={name === page ? 'active' : ''}>
              {PAGES[name].title}
            </a>
          ))}
        </nav>
        <button
          type="button"
          class="link"
          onClick={() => {
            session.clear();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Page />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
