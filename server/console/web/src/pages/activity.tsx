// The activity view: the catalog's recent events from floe's change feed
// (GET /api/floe/v1/events), filtered by branch and type, and a live tail
// of what happens next (the same endpoint as Server-Sent Events). What the
// policy does not let the principal read is not in the feed it is served.

import { useEffect, useState } from "preact/hooks";
import { FeedEvent, floe, tailEvents } from "../api";
import { Problem, Scroll, Time, go, href, short } from "../ui";

// The categories and types a reader filters by; the API takes either.
const TYPES = ["", "table.*", "view.*", "namespace.*", "branch.*", "tag.*", "commit", "merge", "transplant",
  "queue.changed", "gc.completed", "policy.activated"];

// recentEntries is how many reference-log entries back the view starts
// reading: the recent events are those of the last entries, filtered.
const recentEntries = 200;
// shown bounds the rows kept on the page, newest first.
const shown = 100;

function what(e: FeedEvent): string {
  if (e.content) {
    let s = e.content.key.join(".");
    if (e.content.previousKey) s = `${e.content.previousKey.join(".")} → ${s}`;
    if (e.content.iceberg?.operation) s += ` (${e.content.iceberg.operation})`;
    return s;
  }
  if (e.commitDetails) {
    const d = e.commitDetails;
    let s = d.message?.split("\n")[0] ?? "";
    if (d.tables?.length) s += " — " + d.tables.map((t) => `${t.key.join(".")}: ${[t.class, t.resolution].filter(Boolean).join(", ")}`).join("; ");
    return s;
  }
  if (e.move) return `${short(e.move.from) || "∅"} → ${short(e.move.to) || "∅"}${e.move.fastForward ? " (fast-forward)" : ""}${e.move.reason ? ` (${e.move.reason})` : ""}`;
  if (e.queue) return `request ${e.queue.request}: ${e.queue.from ?? "submitted"} → ${e.queue.to}${e.queue.reason ? ` (${e.queue.reason})` : ""}`;
  if (e.gc) return `run ${e.gc.id}: ${e.gc.outcome}, ${e.gc.deleted} file(s) deleted`;
  if (e.policy) return `bundle ${e.policy.revision || "(no revision)"} from ${e.policy.source}`;
  return "";
}

// at is the branch or tag filter ("ref" is the URL's name; a component
// prop cannot be called ref).
export function ActivityPage({ at, types }: { at?: string; types?: string }) {
  const [events, setEvents] = useState<FeedEvent[]>();
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [live, setLive] = useState(false);
  const [refInput, setRefInput] = useState(at ?? "");

  // The recent events: from a cursor some entries before the end.
  useEffect(() => {
    let on = true;
    setEvents(undefined); setError(undefined); setLive(false);
    (async () => {
      const end = await floe.events({ after: "now", limit: 1 });
      const seq = Math.max(0, parseInt(end.next, 10) - recentEntries);
      let after = String(seq), got: FeedEvent[] = [];
      for (;;) {
        const p = await floe.events({ after, ref: at, types, limit: 1000 });
        got = got.concat(p.events).slice(-shown);
        if (p.events.length === 0 || p.next === after) { after = p.next; break; }
        after = p.next;
      }
      if (on) { setEvents(got.reverse()); setNext(after); }
    })().catch((e) => on && setError(e));
    return () => { on = false; };
  }, [at, types]);

  // The live tail, from where the recent events ended.
  useEffect(() => {
    if (!live || next === undefined) return;
    const abort = new AbortController();
    let cursor = next;
    tailEvents({ after: cursor, ref: at, types }, abort.signal,
      (e) => setEvents((cur) => [e, ...(cur ?? [])].slice(0, shown)),
      (id) => { cursor = id; })
      .catch((e) => { if (!abort.signal.aborted) { setError(e); setLive(false); } })
      .finally(() => { if (!abort.signal.aborted) setNext(cursor); });
    return () => { abort.abort(); setNext(cursor); };
  }, [live]);

  const filter = (e: Event) => {
    e.preventDefault();
    go(["activity"], { ref: refInput.trim() || undefined, types });
  };
  return (
    <>
      <h1>Activity</h1>
      <p>The catalog's change feed: what happened on every branch and tag, newest first — commits and merges (with how each
        table was merged), tables and views, references, the merge queue, garbage collection and policy bundles. The recent
        events are those of the last {recentEntries} changes; Live follows what happens next.</p>
      <form class="toolbar" onSubmit={filter} aria-label="Filter the activity">
        <label>Branch or tag <input value={refInput} placeholder="all" onInput={(e) => setRefInput(e.currentTarget.value)} id="activity-ref" /></label>
        <label>Type <select value={types ?? ""} id="activity-types"
          onChange={(e) => go(["activity"], { ref: at, types: e.currentTarget.value || undefined })}>
          {TYPES.map((t) => <option key={t} value={t}>{t || "all"}</option>)}
        </select></label>
        <button type="submit">Filter</button>
        <button type="button" aria-pressed={live} disabled={events === undefined} onClick={() => setLive(!live)}>
          {live ? "Stop live tail" : "Live"}
        </button>
      </form>
      {live && <p class="note ok" role="status" id="activity-live">Following the feed live.</p>}
      {error !== undefined && <Problem error={error} what="read the activity" />}
      {events === undefined && error === undefined && <p class="muted" role="status" data-loading>Loading the activity…</p>}
      {events !== undefined && (events.length === 0
        ? <p class="muted" id="activity-empty">No events{at ? ` on ${at}` : ""}{types ? ` of type ${types}` : ""} yet.</p>
        : (
          <Scroll label="Events">
            <table class="list" id="activity">
              <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Reference</th><th scope="col">By</th><th scope="col">What</th><th scope="col">Commit</th></tr></thead>
              <tbody>
                {events.map((e) => (
                  <tr key={e.id} data-id={e.id}>
                    <td><Time t={e.time} /></td>
                    <th scope="row">{e.type}</th>
                    <td>{e.ref ? <a href={href(["log", e.ref])}>{e.ref}</a> : <span class="muted">catalog</span>}</td>
                    <td>{e.principal}</td>
                    <td>{what(e)}</td>
                    <td>{e.commit ? <code>{short(e.commit)}</code> : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        ))}
    </>
  );
}
