// The merge-queue dashboard (#/queue) and one request (#/queue/{id}):
// requests by state with their classification, wait and merge time; the
// review queue with approve and reject; a submit form; and the report of
// the day as bar charts. Everything comes from floe's documented
// /api/floe/v1/merge-requests endpoints; the policy decides who may
// submit, review or read, and a refusal is shown with its reason.

import { useEffect, useState } from "preact/hooks";
import {
  ApiError, FINAL_STATES, MergeRequest, QUEUE_STATES, QueueReport, floe, nessie,
} from "../api";
import { Dialog } from "../dialog";
import { Loading, Problem, Scroll, Section, Time, href, short, usePager } from "../ui";

// usePoll loads now and again after every(data) milliseconds (0: stop),
// keeping what it showed while it reloads, so a watched page updates in
// place instead of flashing "Loading". New deps start afresh.
function usePoll<T>(load: () => Promise<T>, deps: unknown[], every: (d: T) => number) {
  const key = JSON.stringify(deps);
  const [state, setState] = useState<{ key: string; data?: T; error?: unknown }>({ key });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = () => load().then(
      (data) => {
        if (!live) return;
        setState({ key, data });
        const ms = every(data);
        if (ms > 0) timer = setTimeout(tick, ms);
      },
      (error) => live && setState({ key, error }));
    tick();
    return () => { live = false; clearTimeout(timer); };
  }, [key, n]);
  const cur = state.key === key ? state : { key };
  return { data: cur.data, error: cur.error, reload: () => setN((x) => x + 1) };
}

// seconds says a duration the way `floe queue report` does: tenths of a
// second under a minute, then minutes and hours.
export function seconds(s?: number): string {
  if (s === undefined || !isFinite(s)) return "—";
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${Math.round(s % 60)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

const between = (a?: string, b?: string) => (a && b ? (Date.parse(b) - Date.parse(a)) / 1000 : undefined);
// wait is enqueue to the worker first taking it; merge time is taken to
// landed (the report's definitions).
const waitOf = (r: MergeRequest) => between(r.enqueuedAt, r.startedAt);
const mergeOf = (r: MergeRequest) => (r.state === "merged" ? between(r.startedAt, r.endedAt) : undefined);

function StateBadge({ state }: { state: string }) {
  return <span class={"badge state-" + state}>{state}</span>;
}

// Review refusals, per target, for this tab: once the API refused a
// principal the review of a target's requests, the buttons are not
// offered again; the policy's reason is shown instead.
const refusedReview = new Map<string, string>();

type Verdict = "approve" | "reject" | "cancel";
const verdictWords: Record<Verdict, [string, string]> = {
  approve: ["Approve", "approval"], reject: ["Reject", "rejection"], cancel: ["Cancel request", "cancellation"],
};

// ReviewDialog asks for a reason and a confirmation, then sends the
// verdict; a refusal (403) is shown in place and remembered.
function ReviewDialog({ req, verdict, onClose }: { req: MergeRequest; verdict: Verdict; onClose: (changed: boolean) => void }) {
  const [reason, setReason] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [verb, noun] = verdictWords[verdict];
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true); setError(undefined);
    try {
      await floe.reviewMerge(req.id, verdict, reason.trim());
      onClose(true);
    } catch (err) {
      if (err instanceof ApiError && err.forbidden && verdict !== "cancel") refusedReview.set(req.target, err.message);
      setError(err); setBusy(false);
    }
  };
  const refused = error instanceof ApiError && error.forbidden;
  return (
    <Dialog title={`${verb} merge request ${short(req.id)}`} onClose={() => onClose(refused)}>
      <form class="form" onSubmit={submit}>
        <p>{verdict === "approve"
          ? <>Approving queues <code>{req.source}</code> again for <code>{req.target}</code> at its arrival position; it then lands as the merge engine merges it (a table whose structure both sides changed still fails).</>
          : verdict === "reject"
            ? <>Rejecting is final: <code>{req.source}</code> is not merged into <code>{req.target}</code>.</>
            : <>Cancelling is final: the request is taken out of <code>{req.target}</code>'s queue.</>}
        </p>
        <label>Reason <textarea id="review-reason" rows={3} required={verdict === "reject"} value={reason}
          onInput={(e) => setReason(e.currentTarget.value)} autoFocus /></label>
        {error !== undefined && <Problem error={error} what={`${verb.toLowerCase()} requests into ${req.target}`} />}
        <div class="buttons">
          <button type="button" onClick={() => onClose(refused)}>{refused ? "Close" : "Back"}</button>
          {!refused && <button type="submit" class={verdict === "approve" ? "primary" : "danger"} disabled={busy}>
            {busy ? "Sending…" : `Confirm ${noun}`}</button>}
        </div>
      </form>
    </Dialog>
  );
}

// ReviewButtons offers approve and reject for a request in review, unless
// the API refused this principal the review of its target before.
function ReviewButtons({ req, open }: { req: MergeRequest; open: (r: MergeRequest, v: Verdict) => void }) {
  const refused = refusedReview.get(req.target);
  if (refused !== undefined) {
    return <span class="muted small" role="note">Not permitted to review: {refused}</span>;
  }
  return (
    <div class="actions">
      <button type="button" onClick={() => open(req, "approve")} aria-label={`Approve ${short(req.id)}`}>Approve…</button>
      <button type="button" class="danger" onClick={() => open(req, "reject")} aria-label={`Reject ${short(req.id)}`}>Reject…</button>
    </div>
  );
}

// ---- the dashboard ----

type Dash = { requests: MergeRequest[]; report?: QueueReport; reportError?: unknown };

export function QueuePage({ state, target, prefix }: { state?: string; target?: string; prefix?: string }) {
  const [t, setT] = useState(target ?? "");
  const [p, setP] = useState(prefix ?? "");
  useEffect(() => { setT(target ?? ""); setP(prefix ?? ""); }, [target, prefix]);
  const dash = usePoll<Dash>(async () => {
    const [list, report] = await Promise.all([
      floe.mergeRequests({ target, sourcePrefix: prefix, limit: 1000 }),
      floe.queueReport("24h").then((r) => ({ r }), (e) => ({ e })),
    ]);
    return { requests: list.requests, report: "r" in report ? report.r : undefined, reportError: "e" in report ? report.e : undefined };
  }, [target, prefix], (d) => (d.requests.some((r) => !FINAL_STATES.includes(r.state)) ? 1500 : 10000));
  const [dialog, setDialog] = useState<{ req: MergeRequest; verdict: Verdict }>();
  const open = (req: MergeRequest, verdict: Verdict) => setDialog({ req, verdict });
  const go = (q: { state?: string; target?: string; prefix?: string }) => {
    location.hash = href(["queue"], { state, target, prefix, ...q }).slice(1);
  };

  const all = dash.data?.requests ?? [];
  const counts: Record<string, number> = {};
  for (const r of all) counts[r.state] = (counts[r.state] ?? 0) + 1;
  // Newest first: the one just submitted is at the top.
  const shown = all.filter((r) => !state || r.state === state).slice().reverse();
  const pager = usePager(shown, 20);
  const review = all.filter((r) => r.state === "review");

  return (
    <>
      <h1>Merge queue</h1>
      <p class="muted">Pipelines enqueue their branches; one worker per target builds each candidate, validates it and lands it.
        This page refreshes itself while requests are waiting.</p>
      {dash.error ? <Problem error={dash.error} what="read the merge queue" /> : !dash.data ? <Loading what="the merge queue" /> : (
        <>
          <Section title="Requests" id="requests-h">
            <form class="toolbar" onSubmit={(e) => { e.preventDefault(); go({ target: t.trim() || undefined, prefix: p.trim() || undefined }); }}>
              <label>Target branch <input value={t} onInput={(e) => setT(e.currentTarget.value)} placeholder="e.g. main" /></label>
              <label>Source prefix <input value={p} onInput={(e) => setP(e.currentTarget.value)} placeholder="e.g. ingest/" /></label>
              <button type="submit">Filter</button>
            </form>
            <nav aria-label="Requests by state" class="states">
              <ul>
                <li><a href={href(["queue"], { target, prefix })} aria-current={!state ? "true" : undefined}>all <span class="count">{all.length}</span></a></li>
                {QUEUE_STATES.map((s) => (
                  <li key={s}><a href={href(["queue"], { state: s, target, prefix })} aria-current={state === s ? "true" : undefined}>
                    {s} <span class="count">{counts[s] ?? 0}</span></a></li>
                ))}
              </ul>
            </nav>
            {shown.length ? (
              <>
                <Scroll label="Merge requests">
                  <table class="list" id="queue-requests">
                    <caption class="sr-only">Merge requests{state ? `, ${state}` : ""}, newest first</caption>
                    <thead><tr>
                      <th scope="col">Request</th><th scope="col">Source → target</th><th scope="col">State</th><th scope="col">Class</th>
                      <th scope="col">Classification</th><th scope="col" class="num">Wait</th><th scope="col" class="num">Merge time</th>
                      <th scope="col">Enqueued</th>
                    </tr></thead>
                    <tbody>
                      {pager.items.map((r) => (
                        <tr key={r.id} data-request={r.id}>
                          <th scope="row"><a href={href(["queue", r.id])}><code>{short(r.id)}</code></a></th>
                          <td><code>{r.source}</code> → <code>{r.target}</code>{r.priority ? <span class="muted small"> (priority {r.priority})</span> : null}</td>
                          <td><StateBadge state={r.state} />{r.reasonCode && <span class="muted small"> {r.reasonCode}</span>}</td>
                          <td>{r.class}</td>
                          <td>{r.classification ?? "—"}{r.batched && <span class="muted small"> (batched)</span>}</td>
                          <td class="num">{seconds(waitOf(r))}</td>
                          <td class="num">{seconds(mergeOf(r))}</td>
                          <td><Time t={r.enqueuedAt} /> <span class="muted small">by {r.principal}</span></td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </Scroll>
                {pager.controls}
              </>
            ) : <p class="muted">No {state ?? ""} request{target ? ` into ${target}` : ""}{prefix ? ` from ${prefix}…` : ""}.</p>}
          </Section>

          <Section title={`Review queue (${review.length})`} id="review-h">
            <p class="muted">Structural changes (schema, partition spec, sort order, a dropped or replaced table) wait here for a
              reviewer (the policy's <code>queue.approve</code>).</p>
            {review.length ? (
              <ul class="review-queue" id="review-queue">
                {review.map((r) => (
                  <li key={r.id} class="card">
                    <p><a href={href(["queue", r.id])}><code>{short(r.id)}</code></a> <code>{r.source}</code> → <code>{r.target}</code>
                      <span class="muted small"> by {r.principal}</span></p>
                    {r.reason && <p class="small">{r.reason}</p>}
                    <ReviewButtons req={r} open={open} />
                  </li>
                ))}
              </ul>
            ) : <p class="muted" id="review-queue-empty">Nothing waits for review.</p>}
          </Section>

          <Report report={dash.data.report} error={dash.data.reportError} />
        </>
      )}
      <SubmitForm onSubmitted={dash.reload} />
      {dialog && <ReviewDialog req={dialog.req} verdict={dialog.verdict} onClose={(changed) => { setDialog(undefined); if (changed) dash.reload(); }} />}
    </>
  );
}

const list = (s: string) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

function SubmitForm({ onSubmitted }: { onSubmitted: () => void }) {
  const [source, setSource] = useState("");
  const [target, setTarget] = useState("main");
  const [tables, setTables] = useState("");
  const [priority, setPriority] = useState("0");
  const [checks, setChecks] = useState("");
  const [message, setMessage] = useState("");
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<MergeRequest>();
  const [busy, setBusy] = useState(false);
  const [refs, setRefs] = useState<string[]>([]);
  useEffect(() => { nessie.references(undefined, 200).then((p) => setRefs(p.references.map((r) => r.name!).filter(Boolean)), () => {}); }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true); setError(undefined); setDone(undefined);
    try {
      const r = await floe.submitMerge({
        source: source.trim(), target: target.trim(), tables: list(tables), priority: Number(priority) || 0,
        requiredChecks: list(checks), message: message.trim() || undefined,
      });
      setDone(r); onSubmitted();
    } catch (err) { setError(err); }
    setBusy(false);
  };
  return (
    <Section title="Submit a merge" id="submit-h">
      <form class="form submit-form" onSubmit={submit}>
        <div class="form row">
          <label>Source <input required list="queue-refs" value={source} onInput={(e) => setSource(e.currentTarget.value)} placeholder="branch, tag, name@hash" /></label>
          <label>Target branch <input required list="queue-refs" value={target} onInput={(e) => setTarget(e.currentTarget.value)} /></label>
          <label>Priority <input type="number" step={1} value={priority} onInput={(e) => setPriority(e.currentTarget.value)} /></label>
        </div>
        <datalist id="queue-refs">{refs.map((r) => <option key={r} value={r} />)}</datalist>
        <div class="form row">
          <label>Tables <span class="muted small">(namespace.name, comma separated; empty: every change)</span>
            <input value={tables} onInput={(e) => setTables(e.currentTarget.value)} placeholder="sales.orders" /></label>
          <label>Required checks <span class="muted small">(comma separated)</span>
            <input value={checks} onInput={(e) => setChecks(e.currentTarget.value)} placeholder="e.g. row-count" /></label>
        </div>
        <label>Message <input value={message} onInput={(e) => setMessage(e.currentTarget.value)} /></label>
        {error !== undefined && <Problem error={error} what="submit this merge" />}
        {done && <p class="note ok" role="status">Queued as <a href={href(["queue", done.id])}><code>{short(done.id)}</code></a> ({done.state}).</p>}
        <div class="buttons"><button type="submit" class="primary" disabled={busy}>{busy ? "Submitting…" : "Submit to the queue"}</button></div>
      </form>
    </Section>
  );
}

// ---- the report of the day ----

type Bar = { label: string; value: number; text: string };

// BarChart draws horizontal bars in SVG (no chart library): one row per
// bar, its label on the left and its value after it. The figures are in
// the image's accessible name and, for everyone, in the table below the
// charts.
function BarChart({ title, bars, id }: { title: string; bars: Bar[]; id: string }) {
  const row = 26, labelW = 96, barW = 190, w = 350;
  const max = Math.max(...bars.map((b) => b.value), 0);
  const h = Math.max(1, bars.length) * row + 4;
  const summary = bars.length ? bars.map((b) => `${b.label}: ${b.text}`).join("; ") : "none";
  return (
    <figure class="chart" id={id}>
      <figcaption id={id + "-t"}>{title}</figcaption>
      {bars.length ? (
        <svg viewBox={`0 0 ${w} ${h}`} width="100%" role="img" aria-label={`${title}: ${summary}`} preserveAspectRatio="xMinYMin meet">
          {bars.map((b, i) => {
            const y = i * row + 2;
            const bw = max > 0 ? Math.max(b.value > 0 ? 2 : 0, (b.value / max) * barW) : 0;
            return (
              <g key={b.label}>
                <text x={labelW - 6} y={y + 17} text-anchor="end" class="chart-label">{b.label}</text>
                <rect x={labelW} y={y + 4} width={bw} height={row - 9} rx={2} class="chart-bar" />
                <text x={labelW + bw + 5} y={y + 17} class="chart-value">{b.text}</text>
              </g>
            );
          })}
        </svg>
      ) : <p class="muted small">None in the period.</p>}
    </figure>
  );
}

function sumMaps(ms: (Record<string, number> | undefined)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of ms) for (const [k, v] of Object.entries(m ?? {})) out[k] = (out[k] ?? 0) + v;
  return out;
}
// notes and mixText word the classification mix as `floe queue report`
// does: "2 cherry-pick, 1 structural (2 batched, 1 in review)".
const notes = (batched?: number, review?: number) => {
  const n = [batched ? `${batched} batched` : "", review ? `${review} in review` : ""].filter(Boolean);
  return n.length ? ` (${n.join(", ")})` : "";
};
const mixText = (m?: Record<string, number>) => Object.entries(m ?? {}).sort().map(([k, v]) => `${v} ${k}`).join(", ") || "—";

function Report({ report, error }: { report?: QueueReport; error?: unknown }) {
  if (error !== undefined) return <Section title="Report of the day" id="report-h"><Problem error={error} what="read the queue's report" /></Section>;
  if (!report) return null;
  const classes = (report.classes ?? []).slice().sort((a, b) => a.class.localeCompare(b.class));
  const mix = sumMaps(classes.map((c) => c.classification));
  const failures = sumMaps(classes.map((c) => c.failureReasons));
  const toBars = (m: Record<string, number>) => Object.entries(m).sort().map(([label, value]) => ({ label, value, text: String(value) }));
  return (
    <Section title="Report of the day" id="report-h">
      <p class="muted small">Since <Time t={report.since} />, the figures of <code>floe queue report</code>.</p>
      <div class="charts" id="queue-report">
        <BarChart id="chart-count" title="Requests per class" bars={classes.map((c) => ({ label: c.class, value: c.count, text: String(c.count) }))} />
        <BarChart id="chart-mix" title="Classification mix" bars={toBars(mix)} />
        <BarChart id="chart-wait" title="Median wait per class" bars={classes.map((c) => ({ label: c.class, value: c.medianWaitSeconds ?? 0, text: seconds(c.medianWaitSeconds) }))} />
        <BarChart id="chart-merge" title="Median merge time per class" bars={classes.map((c) => ({ label: c.class, value: c.medianMergeSeconds ?? 0, text: seconds(c.medianMergeSeconds) }))} />
        <BarChart id="chart-failures" title="Failures by reason" bars={toBars(failures)} />
      </div>
      <Scroll label="The report per class">
        <table class="list" id="report-table">
          <caption class="sr-only">The report per class</caption>
          <thead><tr>
            <th scope="col">Class</th><th scope="col" class="num">Count</th><th scope="col">Classification</th>
            <th scope="col" class="num">Median wait</th><th scope="col" class="num">Median merge</th><th scope="col">Failures</th>
          </tr></thead>
          <tbody>
            {classes.map((c) => (
              <tr key={c.class}>
                <th scope="row">{c.class}</th>
                <td class="num">{c.count}</td>
                <td>{mixText(c.classification)}{notes(c.batched, c.review)}</td>
                <td class="num">{seconds(c.medianWaitSeconds)}</td>
                <td class="num">{seconds(c.medianMergeSeconds)}</td>
                <td>{c.failures ?? 0}{c.failures ? ` (${mixText(c.failureReasons)})` : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
      {!!report.pending?.length && (
        <p class="small">Waiting: {report.pending.map((q) => `${q.target}: ${q.queued ?? 0} queued, ${q.review ?? 0} in review`).join("; ")}.</p>
      )}
      {Object.keys(report.bypassCommits ?? {}).length > 0 && (
        <p class="small warn">Commits that bypassed the queue: {mixText(report.bypassCommits)}.</p>
      )}
    </Section>
  );
}

// ---- one request ----

export function QueueRequestPage({ id }: { id: string }) {
  const req = usePoll(() => floe.mergeRequest(id), [id], (r) => (FINAL_STATES.includes(r.state) ? 0 : 1500));
  const [dialog, setDialog] = useState<Verdict>();
  const r = req.data;
  return (
    <>
      <p class="small"><a href="#/queue">Merge queue</a></p>
      <h1>Merge request <code>{short(id)}</code></h1>
      {req.error ? <Problem error={req.error} what="read this merge request" /> : !r ? <Loading what="the request" /> : (
        <>
          <dl class="facts" id="request-facts">
            <dt>State</dt><dd id="request-state"><StateBadge state={r.state} />{r.approved && <span class="muted small"> approved</span>}
              {r.reasonCode && <span class="muted"> {r.reasonCode}</span>}{r.reason && <> — {r.reason}</>}</dd>
            <dt>Source</dt><dd><a href={href(["log", r.sourceRef || r.source])}><code>{r.source}</code></a> at <a href={href(["log", "@" + r.sourceHash])}><code>{short(r.sourceHash)}</code></a></dd>
            <dt>Target</dt><dd><a href={href(["log", r.target])}><code>{r.target}</code></a></dd>
            <dt>Class</dt><dd>{r.class}{r.priority ? `, priority ${r.priority}` : ""}</dd>
            <dt>Classification</dt><dd>{r.classification ?? "—"}{r.batched ? " (batched)" : ""}</dd>
            {!!r.tables?.length && <><dt>Tables</dt><dd>{r.tables.join(", ")}</dd></>}
            {!!r.requiredChecks?.length && <><dt>Required checks</dt><dd>{r.requiredChecks.join(", ")}</dd></>}
            {r.message && <><dt>Message</dt><dd>{r.message}</dd></>}
            <dt>Enqueued</dt><dd><Time t={r.enqueuedAt} /> by {r.principal}</dd>
            <dt>Wait</dt><dd>{seconds(waitOf(r))}</dd>
            <dt>Merge time</dt><dd>{seconds(mergeOf(r))}</dd>
            {r.landedCommit && <><dt>Landed commit</dt><dd id="landed-commit">
              <a href={href(["log", "@" + r.landedCommit])}><code>{short(r.landedCommit)}</code></a>
              {r.landedOnto && <> onto <a href={href(["log", "@" + r.landedOnto])}><code>{short(r.landedOnto)}</code></a>
                {" · "}<a href={href(["diff"], { from: "@" + r.landedOnto, to: "@" + r.landedCommit })}>what it changed</a></>}
              {" · "}<a href={href(["log", r.target])}>history of {r.target}</a></dd></>}
            {!!r.hygiene?.length && <><dt>Afterwards</dt><dd>{r.hygiene.join("; ")}</dd></>}
          </dl>
          {!FINAL_STATES.includes(r.state) && (
            <div class="actions request-actions">
              {r.state === "review" && <ReviewButtons req={r} open={(_, v) => setDialog(v)} />}
              <button type="button" onClick={() => setDialog("cancel")}>Cancel request…</button>
            </div>
          )}
          {!!r.tableClasses?.length && (
            <Section title="Tables" id="tables-h">
              <Scroll label="Classification per table">
                <table class="list">
                  <caption class="sr-only">Classification per table</caption>
                  <thead><tr><th scope="col">Table</th><th scope="col">Class</th><th scope="col">Why</th></tr></thead>
                  <tbody>{r.tableClasses.map((t, i) => <tr key={i}><th scope="row">{t.table}</th><td>{t.class}</td><td>{t.reason}</td></tr>)}</tbody>
                </table>
              </Scroll>
            </Section>
          )}
          <Validations r={r} />
          <Section title="Audit trail" id="audit-h">
            <Scroll label="Audit trail">
              <table class="list" id="audit">
                <caption class="sr-only">Audit trail</caption>
                <thead><tr><th scope="col">When</th><th scope="col">Change</th><th scope="col">By</th><th scope="col">Reason</th><th scope="col">Candidate</th></tr></thead>
                <tbody>
                  {r.audit.map((a, i) => (
                    <tr key={i}>
                      <td><Time t={a.at} /></td>
                      <td>{a.from ? <><StateBadge state={a.from} /> → </> : null}<StateBadge state={a.to} /></td>
                      <td>{a.principal}</td>
                      <td>{a.reason ?? ""}</td>
                      <td>{a.candidate ? <code>{short(a.candidate)}</code> : ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Scroll>
          </Section>
        </>
      )}
      {r && dialog && <ReviewDialog req={r} verdict={dialog} onClose={(changed) => { setDialog(undefined); if (changed) req.reload(); }} />}
    </>
  );
}

// Validations lists every validation run, newest first, keyed by the
// candidate commit it ran on.
function Validations({ r }: { r: MergeRequest }) {
  const vs = (r.validations ?? []).slice().reverse();
  return (
    <Section title="Validations" id="validations-h">
      {!vs.length ? <p class="muted">Not validated yet.</p> : (
        <div id="validations">
          {vs.map((v, i) => (
            <article class={"validation " + (v.passed ? "passed" : "failed")} key={(v.candidate ?? "") + i} data-candidate={v.candidate}>
              <h3>Candidate <a href={href(["log", "@" + v.candidate])}><code>{short(v.candidate)}</code></a>{" "}
                <span class={v.passed ? "verdict ok" : "verdict fail"}>{v.passed ? "passed" : "failed"}</span></h3>
              <p class="small muted">Built on <code>{short(v.targetHead)}</code>, <Time t={v.at} /></p>
              {v.error && <p class="note error">{v.error}</p>}
              {v.results?.length ? (
                <Scroll label={`Checks on ${short(v.candidate)}`}>
                  <table class="list checks">
                    <caption class="sr-only">Checks on candidate {short(v.candidate)}</caption>
                    <thead><tr><th scope="col">Check</th><th scope="col">Result</th><th scope="col">Reason</th><th scope="col" class="num">Duration</th></tr></thead>
                    <tbody>
                      {v.results.map((c) => (
                        <tr key={c.name}>
                          <th scope="row">{c.name}</th>
                          <td><span class={c.passed ? "verdict ok" : "verdict fail"}>{c.passed ? "pass" : "fail"}</span></td>
                          <td>{c.reason ?? ""}</td>
                          <td class="num">{seconds(c.durationSeconds)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </Scroll>
              ) : <p class="muted small">No check reported.</p>}
            </article>
          ))}
        </div>
      )}
    </Section>
  );
}
