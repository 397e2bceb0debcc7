// A reference's history as a commit graph, paged by the server, filtered
// by table or key prefix through Nessie's commit-log filter.

import { useState } from "preact/hooks";
import { keyString, LogEntry, nessie } from "../api";
import { GraphRow, layoutLanes } from "../graph";
import { href, MoreButton, Problem, short, Time, useTokenPages } from "../ui";
import { celString } from "./tree";

const LANE = 14, ROW = 44, COLORS = ["#0b5cad", "#b5420b", "#127a3a", "#7a1f9c", "#8a6d00", "#0f7c86"];

function Lanes({ row }: { row: GraphRow }) {
  const x = (c: number) => LANE / 2 + c * LANE;
  const y = (v: 0 | 1 | 2) => (v === 0 ? 0 : v === 1 ? ROW / 2 : ROW);
  return (
    <svg class="lanes" width={row.width * LANE} height={ROW} aria-hidden="true" focusable="false">
      {row.segments.map((s, i) => (
        <path key={i} d={`M${x(s.x1)} ${y(s.y1)} C${x(s.x1)} ${(y(s.y1) + y(s.y2)) / 2} ${x(s.x2)} ${(y(s.y1) + y(s.y2)) / 2} ${x(s.x2)} ${y(s.y2)}`}
          stroke={COLORS[s.lane % COLORS.length]} stroke-width="2" fill="none" />
      ))}
      <circle cx={x(row.col)} cy={ROW / 2} r={row.merge ? 5 : 4} fill={row.merge ? "#fff" : COLORS[row.col % COLORS.length]}
        stroke={COLORS[row.col % COLORS.length]} stroke-width="2" />
    </svg>
  );
}

const parentsOf = (e: LogEntry) => e.commitMeta.parentCommitHashes?.length
  ? e.commitMeta.parentCommitHashes
  : [e.parentCommitHash ?? "", ...(e.additionalParents ?? [])].filter(Boolean);

export function LogPage({ at: ref, path }: { at: string; path?: string }) {
  const [input, setInput] = useState(path ?? "");
  const filter = path ? `operations.exists(op, op.key.startsWith(${celString(path)}))` : undefined;
  const list = useTokenPages(async (token) => {
    const p = await nessie.history(ref, token, filter);
    return { items: p.logEntries, hasMore: p.hasMore, token: p.token };
  }, [ref, filter]);
  const rows = layoutLanes(list.items.map((e) => ({ hash: e.commitMeta.hash, parents: parentsOf(e) })));

  return (
    <>
      <div class="page-head">
        <h1><span class="muted">History of</span> {ref}</h1>
        <nav class="actions" aria-label="This reference"><a href={href(["ref", ref])}>Contents</a></nav>
      </div>
      <form class="toolbar" onSubmit={(e) => { e.preventDefault(); location.hash = href(["log", ref], { path: input.trim() }).slice(1); }}>
        <label>Table or key prefix <input type="search" value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder="e.g. sales.orders" /></label>
        <button type="submit">Filter</button>
        {path && <a href={href(["log", ref])}>Clear filter</a>}
      </form>
      {list.error !== undefined ? <Problem error={list.error} what={`read the history of ${ref}`} /> : (
        <>
          <ol class="commits" id="commits" aria-label={`Commits of ${ref}, newest first`}>
            {list.items.map((e, i) => {
              const m = e.commitMeta;
              const parents = parentsOf(e);
              const props = Object.entries(m.properties ?? {});
              return (
                <li key={m.hash} class="commit">
                  {!path && <Lanes row={rows[i]} />}
                  <div class="commit-body">
                    <div class="commit-line">
                      <a href={href(["diff"], { from: parents[0] ? "@" + parents[0] : "", to: "@" + m.hash })} title="Changes of this commit"><code>{short(m.hash)}</code></a>
                      <span class="message">{m.message.split("\n")[0] || <em class="muted">(no message)</em>}</span>
                      {parents.length > 1 && <span class="badge merge">merge</span>}
                    </div>
                    <div class="commit-meta muted">
                      {m.authors?.[0] ?? m.author ?? m.committer} · <Time t={m.commitTime} />
                      {m.committer && m.committer !== (m.authors?.[0] ?? m.author) && <> · committed by {m.committer}</>}
                    </div>
                    {(e.operations?.length || props.length || m.message.includes("\n")) ? (
                      <details>
                        <summary>{e.operations?.length ?? 0} operation(s){props.length ? `, ${props.length} propert${props.length === 1 ? "y" : "ies"}` : ""}</summary>
                        {m.message.includes("\n") && <pre class="message-full">{m.message}</pre>}
                        {e.operations && e.operations.length > 0 && (
                          <ul class="ops">
                            {e.operations.map((op) => (
                              <li key={op.type + keyString(op.key)}>
                                <span class={"op " + op.type.toLowerCase()}>{op.type}</span>{" "}
                                {op.content?.type === "ICEBERG_TABLE" || op.content?.type === "ICEBERG_VIEW"
                                  ? <a href={href([op.content.type === "ICEBERG_TABLE" ? "table" : "view", "@" + m.hash, ...op.key.elements])}><code>{keyString(op.key)}</code></a>
                                  : <code>{keyString(op.key)}</code>}
                                {op.content?.snapshotId !== undefined && <span class="muted"> snapshot {op.content.snapshotId}</span>}
                              </li>
                            ))}
                          </ul>
                        )}
                        {props.length > 0 && (
                          <dl class="props">{props.map(([k, v]) => <><dt key={"k" + k}><code>{k}</code></dt><dd key={"v" + k}><code>{v}</code></dd></>)}</dl>
                        )}
                      </details>
                    ) : null}
                  </div>
                </li>
              );
            })}
          </ol>
          {list.loading && <p class="muted" role="status">Loading commits…</p>}
          {!list.loading && !list.items.length && <p class="muted">No commit{path ? ` touches ${path}` : ""}.</p>}
          <MoreButton hasMore={list.hasMore} loading={list.loading} more={list.more} what="commits" />
        </>
      )}
    </>
  );
}
