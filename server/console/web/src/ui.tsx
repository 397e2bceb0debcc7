// Shared pieces of the pages: loading and error states, links, times,
// paging.

import { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, nessie } from "./api";

// href builds a console link: "#/" and the path segments, each encoded,
// then the query.
export function href(segments: string[], query?: Record<string, string | undefined>): string {
  let s = "#/" + segments.map(encodeURIComponent).join("/");
  if (query) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v) p.set(k, v);
    const q = p.toString();
    if (q) s += "?" + q;
  }
  return s;
}

export function go(segments: string[], query?: Record<string, string | undefined>) {
  location.hash = href(segments, query).slice(1);
}

export const short = (h?: string) => (h ? h.slice(0, 12) : "");

// ago says how long ago t was (or, for a future t, how long until it), in
// the largest unit that fits.
export function ago(t?: string): string {
  if (!t) return "";
  const d = (Date.now() - Date.parse(t)) / 1000;
  const s = Math.abs(d);
  const units: [number, string][] = [[86400 * 365, "y"], [86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
  const [n, u] = units.find(([n]) => s >= n) ?? [1, "s"];
  const v = `${Math.floor(s / n)}${u}`;
  return d >= 0 ? `${v} ago` : `in ${v}`;
}

export function Time({ t }: { t?: string | number }) {
  if (t === undefined || t === "") return <span class="muted">—</span>;
  const iso = typeof t === "number" ? new Date(t).toISOString() : t;
  return <time dateTime={iso} title={iso}>{new Date(iso).toLocaleString()} <span class="muted">({ago(iso)})</span></time>;
}

// Problem renders a refused or failed request. A refusal (403) says so
// and nothing of what was refused is shown; 401 asks to sign in.
export function Problem({ error, what }: { error: unknown; what?: string }) {
  if (error instanceof ApiError) {
    if (error.forbidden) {
      return <div class="note denied" role="alert"><strong>Not permitted.</strong> {what ? `You may not ${what}` : "The policy does not let you do this"}: {error.message}</div>;
    }
    if (error.unauthorized) {
      return <div class="note denied" role="alert"><strong>Sign-in needed.</strong> {error.message} <a href="#/signin">Sign in</a></div>;
    }
    return <div class="note error" role="alert"><strong>{error.status ? `${error.status} ${error.code}` : error.code}.</strong> {error.message}</div>;
  }
  return <div class="note error" role="alert"><strong>Error.</strong> {String(error)}</div>;
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" role="status" data-loading>Loading {what}…</p>;
}

// useLoad runs load whenever deps change and keeps its latest result.
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown }>({});
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState({});
    load().then((data) => live && setState({ data }), (error) => live && setState({ error }));
    return () => { live = false; };
  }, [...deps, n]);
  return { ...state, reload: () => setN(n + 1) };
}

// Pager pages a list that is all in memory (references, snapshots).
export function usePager<T>(items: T[], size = 25) {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(items.length / size));
  const p = Math.min(page, pages - 1);
  return {
    items: items.slice(p * size, (p + 1) * size),
    controls: pages > 1 ? (
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={p === 0} onClick={() => setPage(p - 1)}>Previous</button>
        <span aria-live="polite">Page {p + 1} of {pages} ({items.length})</span>
        <button type="button" disabled={p >= pages - 1} onClick={() => setPage(p + 1)}>Next</button>
      </nav>
    ) : null,
  };
}

// useTokenPages pages a listing the server pages with a token: "More"
// fetches the next page and appends it.
export function useTokenPages<T>(fetchPage: (token?: string) => Promise<{ items: T[]; hasMore?: boolean; token?: string }>, deps: unknown[]) {
  // Results are kept with the deps they were fetched for, so a render
  // after the deps changed (before the effect refetches) shows nothing
  // stale: a list filtered anew never flashes the unfiltered one.
  const key = JSON.stringify(deps);
  type State = { key: string; items: T[]; next?: string; error?: unknown; loading: boolean };
  const [state, setState] = useState<State>({ key, items: [], loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState({ key, items: [], loading: true });
    fetchPage().then(
      (p) => live && setState({ key, items: p.items, next: p.hasMore ? p.token : undefined, loading: false }),
      (error) => live && setState({ key, items: [], error, loading: false }));
    return () => { live = false; };
  }, [key, n]);
  const cur: State = state.key === key ? state : { key, items: [], loading: true };
  const more = () => {
    setState({ ...cur, loading: true });
    fetchPage(cur.next).then(
      (p) => setState((old) => old.key === key ? { key, items: old.items.concat(p.items), next: p.hasMore ? p.token : undefined, loading: false } : old),
      (error) => setState((old) => old.key === key ? { ...old, error, loading: false } : old));
  };
  return { items: cur.items, error: cur.error, loading: cur.loading, hasMore: !!cur.next, more, reload: () => setN(n + 1) };
}

export function MoreButton({ hasMore, loading, more, what }: { hasMore: boolean; loading: boolean; more: () => void; what: string }) {
  if (!hasMore) return null;
  return <p><button type="button" onClick={more} disabled={loading}>{loading ? "Loading…" : `Load more ${what}`}</button></p>;
}

// Scroll holds a wide table: it scrolls sideways on its own (the page
// never does), and is a named, focusable region so a keyboard can scroll
// it too.
export function Scroll({ label, children }: { label: string; children: ComponentChildren }) {
  return <div class="scroll" tabIndex={0} role="region" aria-label={label}>{children}</div>;
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return <section aria-labelledby={id}><h2 id={id}>{title}</h2>{children}</section>;
}

// KV renders a string map as a two-column table.
export function KV({ map, caption, empty }: { map?: Record<string, unknown>; caption: string; empty?: string }) {
  const keys = Object.keys(map ?? {}).sort();
  if (!keys.length) return <p class="muted">{empty ?? "None."}</p>;
  return (
    <Scroll label={caption}>
      <table class="kv">
        <caption class="sr-only">{caption}</caption>
        <thead><tr><th scope="col">Key</th><th scope="col">Value</th></tr></thead>
        <tbody>{keys.map((k) => <tr key={k}><th scope="row"><code>{k}</code></th><td><code>{String(map![k])}</code></td></tr>)}</tbody>
      </table>
    </Scroll>
  );
}

// RefPicker switches the page to another reference: a text field (any
// reference expression, @hash included) suggesting the known references.
export function RefPicker({ current, to }: { current: string; to: (ref: string) => string }) {
  const [value, setValue] = useState(current);
  const refs = useLoad(() => nessie.references(undefined, 200), []);
  useEffect(() => setValue(current), [current]);
  return (
    <form class="toolbar" onSubmit={(e) => { e.preventDefault(); if (value.trim()) location.hash = to(value.trim()).slice(1); }}>
      <label>Reference <input list="known-refs" value={value} onInput={(e) => setValue(e.currentTarget.value)} /></label>
      <datalist id="known-refs">{(refs.data?.references ?? []).map((r) => <option key={r.name} value={r.name} />)}</datalist>
      <button type="submit">Show</button>
    </form>
  );
}
