// A reference's history as a commit graph, paged by the server, filtered
// by table or key prefix through Nessie's commit-log filter.

import { useState } from "preact/hooks";
import { keyString, LogEntry, nessie } from "../api";
import { GraphRow, layoutLanes } from "../graph";
import { href, MoreButton, Problem, RefPicker, short, Time, useTokenPages } from "../ui";
import { celString } from "./tree";

const LANE = 14, DOT = 18, COLORS = ["#0b5cad", "#b5420b", "#127a3a", "#7a1f9c", "#8a6d00", "#0f7c86"];

// Lanes draws one row of the graph. The row grows with its commit's
// details, so the SVG stretches to the row's height: the dot stays DOT
// from the top, lanes below it end at the row's bottom (100%).
function Lanes({ row }: { row: GraphRow }) {
  const x = (c: number) => LANE / 2 + c * LANE;
  const lines: { x1: number; y1: string | number; x2: number; y2: string | number; lane: number; stub?: boolean }[] = [];
  for (const s of row.segments) {
    if (s.stub) {
      lines.push({ x1: x(s.x1), y1: DOT + 16, x2: x(s.x2), y2: DOT, lane: s.lane, stub: true });
    } else if (s.y1 === 0) {
      lines.push({ x1: x(s.x1), y1: 0, x2: x(s.x2), y2: DOT, lane: s.lane });
    } else {
      lines.push({ x1: x(s.x1), y1: DOT, x2: x(s.x2), y2: 2 * DOT, lane: s.lane });
      lines.push({ x1: x(s.x2), y1: 2 * DOT, x2: x(s.x2), y2: "100%", lane: s.lane });
    }
  }
  const color = (l: number) => COLORS[l % COLORS.length];
  return (
    <div class="lanes" style={{ width: `${row.width * LANE}px` }}>
    <svg width="100%" height="100%" aria-hidden="true" focusable="false">
      {lines.map((l, i) => (
        <line key={i} x1={l.x1} y1={l.y1} x2={l.x2} y2={l.y2} stroke={color(l.lane)} stroke-width="2"
          stroke-dasharray={l.stub ? "3 3" : undefined} stroke-linecap="round" />
      ))}
      <circle cx={x(row.col)} cy={DOT} r={row.merge ? 5 : 4} fill={row.merge ? "#fff" : color(row.col)} stroke={color(row.col)} stroke-width="2" />
    </svg>
    </div>
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
      <RefPicker current={ref} to={(r) => href(["log", r], { path })} />
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
                      {parents.slice(1).map((p) => <a key={p} class="small" href={href(["log", "@" + p])}>from <code>{short(p)}</code></a>)}
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
          {list.loading && <p class="muted" role="status" data-loading>Loading commits…</p>}
          {!list.loading && !list.items.length && <p class="muted">No commit{path ? ` touches ${path}` : ""}.</p>}
          <MoreButton hasMore={list.hasMore} loading={list.loading} more={list.more} what="commits" />
        </>
      )}
    </>
  );
}
