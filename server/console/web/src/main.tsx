// The console's shell: navigation, sign-in and the hash router. Routes
// are "#/" and encoded path segments, so a link can be bookmarked and the
// server needs no route of its own per page.

import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { iceberg, setToken, token } from "./api";
import { ActivityPage } from "./pages/activity";
import { DiffPage } from "./pages/diff";
import { LogPage } from "./pages/log";
import { QueuePage, QueueRequestPage } from "./pages/queue";
import { RefsPage } from "./pages/refs";
import { TablePage, ViewPage } from "./pages/table";
import { TreePage } from "./pages/tree";
import { Problem } from "./ui";

type Route = { segments: string[]; query: URLSearchParams };

function parseRoute(): Route {
  const h = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [path, q] = h.split("?", 2);
  return { segments: path ? path.split("/").map(decodeURIComponent) : [], query: new URLSearchParams(q ?? "") };
}

function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute);
  useEffect(() => {
    // Only "#/..." hashes are routes; "#main" (the skip link) is not.
    const on = () => { if (location.hash === "" || location.hash.startsWith("#/")) setRoute(parseRoute()); };
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function Page({ route }: { route: Route }) {
  const [page, ...rest] = route.segments;
  const q = route.query;
  switch (page ?? "") {
    case "": return <RefsPage />;
    case "ref": return <TreePage at={rest[0] ?? "main"} />;
    case "log": return <LogPage at={rest[0] ?? "main"} path={q.get("path") ?? undefined} />;
    case "diff": return <DiffPage from={q.get("from") ?? undefined} to={q.get("to") ?? undefined} />;
    case "table": return <TablePage at={rest[0]} k={rest.slice(1)} />;
    case "view": return <ViewPage at={rest[0]} k={rest.slice(1)} />;
    case "queue": return rest[0]
      ? <QueueRequestPage id={rest[0]} />
      : <QueuePage state={q.get("state") ?? undefined} target={q.get("target") ?? undefined} prefix={q.get("prefix") ?? undefined} />;
    // Keyed by the filters: a new filter is a new page, with its own load.
    case "activity": return <ActivityPage key={q.toString()} at={q.get("ref") ?? undefined} types={q.get("types") ?? undefined} />;
    case "signin": return <SignIn />;
    default: return <p class="note error" role="alert">No page {page}. <a href="#/">References</a></p>;
  }
}

function SignIn() {
  const [tok, setTok] = useState("");
  const [client, setClient] = useState("");
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState(!!token());
  const useToken = (e: Event) => {
    e.preventDefault();
    setToken(tok.trim()); setDone(true); location.hash = "#/";
  };
  const useOAuth = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const r = await iceberg.oauthToken(client.trim(), secret);
      setToken(r.access_token); setDone(true); location.hash = "#/";
    } catch (err) { setError(err); }
  };
  return (
    <>
      <h1>Sign in</h1>
      <p>The console sends the same bearer token as any API client; the policy decides what it may read and do. The token is kept
        in this tab only (session storage) and never sent anywhere but this server.</p>
      {done && <p class="note ok" role="status">A token is set. <button type="button" onClick={() => { setToken(""); setDone(false); }}>Sign out</button></p>}
      <div class="cards">
        <form class="form card" onSubmit={useToken} aria-labelledby="tok-h">
          <h2 id="tok-h">Bearer token</h2>
          <label>Token <input type="password" autoComplete="off" required value={tok} onInput={(e) => setTok(e.currentTarget.value)} id="token" /></label>
          <div class="buttons"><button type="submit" class="primary">Use this token</button></div>
        </form>
        <form class="form card" onSubmit={useOAuth} aria-labelledby="oauth-h">
          <h2 id="oauth-h">OAuth client credentials</h2>
          <label>Client id <input required autoComplete="username" value={client} onInput={(e) => setClient(e.currentTarget.value)} /></label>
          <label>Client secret <input type="password" required autoComplete="current-password" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} /></label>
          {error !== undefined && <Problem error={error} what="get a token" />}
          <div class="buttons"><button type="submit" class="primary">Get a token</button></div>
        </form>
      </div>
    </>
  );
}

function App() {
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const first = route.segments[0] ?? "";
  // A new page moves focus to its content, so keyboard and screen-reader
  // users land where the page changed (as a full page load would).
  const [n, setN] = useState(0);
  useEffect(() => { if (n > 0) main.current?.focus(); setN(n + 1); }, [location.hash]);
  const nav: [string, string, string[]][] = [["References", "#/", [""]], ["Contents", "#/ref/main", ["ref", "table", "view"]],
    ["History", "#/log/main", ["log"]], ["Diff", "#/diff", ["diff"]], ["Merge queue", "#/queue", ["queue"]], ["Activity", "#/activity", ["activity"]]];
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">floe</a>
        <nav aria-label="Main">
          <ul>
            {nav.map(([label, to, pages]) => (
              <li key={to}><a href={to} aria-current={pages.includes(first) ? "page" : undefined}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <a class="signin" href="#/signin" aria-current={first === "signin" ? "page" : undefined}>{token() ? "Signed in" : "Sign in"}</a>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

const root = document.getElementById("app")!;
root.textContent = ""; // the "Loading" placeholder is not preact's to diff
render(<App />, root);
