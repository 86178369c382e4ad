import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { AdminClient } from "./api/admin-client.js";
import { RelayEvents } from "./api/event-stream.js";
import type { SessionInfo } from "./api/types.js";
import { AppContext, type AppContextValue } from "./app-context.js";
import { Layout } from "./components/layout.js";
import { EmptyState } from "./components/notice.js";
import { Link } from "./components/link.js";
import { Toasts, useToasts } from "./components/toasts.js";
import { applyTheme, storedTheme } from "./components/theme-switch.js";
import { forgetPlaygroundKeys } from "./pages/stacks/playground-key.js";
import { AccountPage } from "./pages/account/account-page.js";
import { ForgePage } from "./pages/forge/forge-page.js";
import { StackEditPage } from "./pages/forge/stack-edit-page.js";
import { KeysPage } from "./pages/keys/keys-page.js";
import { MachinePage } from "./pages/machines/machine-page.js";
import { MachinesPage } from "./pages/machines/machines-page.js";
import { SignInPage } from "./pages/sign-in/sign-in-page.js";
import { StackPage } from "./pages/stacks/stack-page.js";
import { StacksPage } from "./pages/stacks/stacks-page.js";
import { UsagePage } from "./pages/usage/usage-page.js";
import { UsersPage } from "./pages/account/users-page.js";
import { AuditPage } from "./pages/audit/audit-page.js";
import { AlertsPage } from "./pages/alerts/alerts-page.js";
import { RequestPage } from "./pages/requests/request-page.js";
import { RequestsPage } from "./pages/requests/requests-page.js";
import { OverviewPage } from "./pages/overview/overview-page.js";
import { parseRoute, type Route } from "./router.js";
import "./styles.css";

/** Each page's name in the window's title. */
const PAGE_TITLES: Record<Route["page"], string> = {
  overview: "Overview",
  machines: "Machines",
  machine: "Machine",
  stacks: "Stacks",
  stack: "Stack",
  "stack-edit": "Edit stack",
  forge: "Forge",
  keys: "Keys",
  usage: "Usage",
  users: "Users",
  audit: "Audit",
  alerts: "Alerts",
  requests: "Requests",
  request: "Request",
  account: "Account",
  "not-found": "Not found",
};

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "overview":
      return <OverviewPage />;
    case "machines":
      return <MachinesPage />;
    case "machine":
      return <MachinePage id={route.id} />;
    case "stacks":
      return <StacksPage />;
    case "stack":
      return <StackPage id={route.id} />;
    case "forge":
      return <ForgePage />;
    case "stack-edit":
      return <StackEditPage id={route.id} />;
    case "keys":
      return <KeysPage />;
    case "usage":
      return <UsagePage />;
    case "users":
      return <UsersPage />;
    case "audit":
      return <AuditPage />;
    case "alerts":
      return <AlertsPage />;
    case "requests":
      return <RequestsPage />;
    case "request":
      return <RequestPage id={route.id} />;
    case "account":
      return <AccountPage />;
    case "not-found":
      return (
        <EmptyState title="There is no such page">
          <p>
            Go to the <Link href="/">Overview</Link>.
          </p>
        </EmptyState>
      );
  }
}

function App() {
  const client = useMemo(() => new AdminClient(), []);
  const events = useMemo(() => new RelayEvents(), []);
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [bootError, setBootError] = useState<string | null>(null);
  /** Why the sign-in page shows again, when the session ended without the button (an admin disabled the person, say). */
  const [ended, setEnded] = useState(false);
  const [path, setPath] = useState(location.pathname);
  const { toasts, notify, dismiss } = useToasts();

  useEffect(() => {
    client.onSignedOut = () => {
      setEnded(true);
      setSession(null);
    };
    client.session().then(setSession, (err: Error) => setBootError(err.message));
    const onPop = () => setPath(location.pathname);
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, [client]);

  useEffect(() => {
    if (session) events.start();
    else events.stop();
    // Signed out, however (the button, a session that expired or was ended elsewhere): the next person at this
    // browser does not chat with the playground keys of the one who left.
    if (session === null) forgetPlaygroundKeys();
  }, [session, events]);

  const route = parseRoute(path);
  useEffect(() => {
    document.title = `${PAGE_TITLES[route.page]} · Makina`;
  }, [route.page]);

  if (bootError) return <EmptyState title="The relay cannot be reached">{bootError}</EmptyState>;
  if (session === undefined) return <div class="booting" aria-busy="true" />;
  if (session === null) {
    const signedIn = (s: SessionInfo) => {
      setEnded(false);
      setSession(s);
    };
    return <SignInPage client={client} onSignedIn={signedIn} sessionEnded={ended} />;
  }

  const ctx: AppContextValue = {
    client,
    events,
    session,
    navigate: (to) => {
      // A link to the same page with another query (`/requests?key=…` → `/requests`) is a navigation too.
      if (to !== location.pathname + location.search) history.pushState(null, "", to);
      setPath(to);
      scrollTo(0, 0);
    },
    signOut: () => {
      void client.signOut().finally(() => setSession(null));
    },
    notify,
  };
  return (
    <AppContext.Provider value={ctx}>
      <Layout route={route}>
        {/* A page starts afresh for another address (its query too: the filters it was linked with). */}
        <Page key={path} route={route} />
      </Layout>
      <Toasts toasts={toasts} dismiss={dismiss} />
    </AppContext.Provider>
  );
}

// The theme chosen in this browser, before the first paint.
applyTheme(storedTheme());
render(<App />, document.getElementById("app")!);
