// A reference's contents: its namespaces, tables and views, paged by the
// server (Nessie's entries).

import { useState } from "preact/hooks";
import { keyString, nessie } from "../api";
import { MoreButton, Problem, RefPicker, Scroll, href, short, useLoad, useTokenPages } from "../ui";

// celString quotes s for a CEL filter.
export const celString = (s: string) => JSON.stringify(s);

export function TreePage({ at: ref }: { at: string }) {
  const head = useLoad(() => nessie.reference(ref), [ref]);
  const [prefix, setPrefix] = useState("");
  const [applied, setApplied] = useState("");
  const filter = applied ? `entry.key.startsWith(${celString(applied)})` : undefined;
  const list = useTokenPages(async (token) => {
    const p = await nessie.entries(ref, token, filter);
    return { items: p.entries, hasMore: p.hasMore, token: p.token };
  }, [ref, filter]);
  const r = head.data?.reference;

  return (
    <>
      <div class="page-head">
        <h1><span class="muted">{r?.type === "TAG" ? "Tag" : "Branch"}</span> {ref}</h1>
        <nav class="actions" aria-label="This reference">
          <a href={href(["log", ref])}>History</a>
          <a href={href(["diff"], { from: "main", to: ref })}>Diff with main</a>
        </nav>
      </div>
      {head.error ? <Problem error={head.error} what={`read ${ref}`} /> : r && <p>Head <a href={href(["log", ref])}><code>{short(r.hash)}</code></a></p>}
      <RefPicker current={ref} to={(r) => href(["ref", r])} />
      <form class="toolbar" onSubmit={(e) => { e.preventDefault(); setApplied(prefix.trim()); }}>
        <label>Key prefix <input type="search" value={prefix} onInput={(e) => setPrefix(e.currentTarget.value)} placeholder="e.g. sales." /></label>
        <button type="submit">Filter</button>
      </form>
      {list.error !== undefined ? <Problem error={list.error} what={`list the contents of ${ref}`} /> : (
        <>
          <Scroll label={`Contents of ${ref}`}>
            <table class="list" id="entries">
              <caption class="sr-only">Contents of {ref}</caption>
              <thead><tr><th scope="col">Key</th><th scope="col">Type</th></tr></thead>
              <tbody>
                {list.items.map((e) => {
                  const k = e.name.elements;
                  const kind = e.type === "ICEBERG_TABLE" ? "table" : e.type === "ICEBERG_VIEW" ? "view" : e.type === "NAMESPACE" ? "namespace" : e.type;
                  return (
                    <tr key={keyString(k)}>
                      <th scope="row">{kind === "table" || kind === "view"
                        ? <a href={href([kind, ref, ...k])}>{keyString(k)}</a>
                        : <button type="button" class="link" onClick={() => { setPrefix(keyString(k) + "."); setApplied(keyString(k) + "."); }}>{keyString(k)}</button>}</th>
                      <td><span class={"badge " + kind}>{kind}</span></td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </Scroll>
          {!list.loading && !list.items.length && <p class="muted">Nothing here{applied ? ` under ${applied}` : ""}.</p>}
          <MoreButton hasMore={list.hasMore} loading={list.loading} more={list.more} what="entries" />
        </>
      )}
    </>
  );
}
