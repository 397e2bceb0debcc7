// The references page: branches and tags with their heads, ages,
// retention and expiry (floe's /refs), and create, delete and merge.

import { useState } from "preact/hooks";
import { ApiError, floe, MergePlan, nessie, Ref, RefStatus } from "../api";
import { Dialog } from "../dialog";
import { Loading, Problem, Scroll, Time, href, short, useLoad, usePager } from "../ui";

type Row = RefStatus & { message?: string };

// loadRefs reads floe's reference listing, which carries retention and
// expiry; a principal refused it still sees Nessie's listing.
async function loadRefs(): Promise<{ rows: Row[]; retention: boolean }> {
  try {
    const r = await floe.refs();
    return { rows: r.references, retention: true };
  } catch (e) {
    if (!(e instanceof ApiError) || !(e.forbidden || e.notFound)) throw e;
    const rows: Row[] = [];
    let token: string | undefined;
    do {
      const p = await nessie.references(token, 200);
      for (const ref of p.references) {
        rows.push({
          name: ref.name!, type: ref.type as "BRANCH" | "TAG", hash: ref.hash, created: "", age: "", lastActivity: "",
          lastCommit: ref.metadata?.commitMetaOfHEAD?.commitTime, expired: false, retention: {},
          message: ref.metadata?.commitMetaOfHEAD?.message,
        });
      }
      token = p.hasMore ? p.token : undefined;
    } while (token);
    return { rows, retention: false };
  }
}

export function RefsPage() {
  const { data, error, reload } = useLoad(loadRefs, []);
  const [filter, setFilter] = useState("");
  const [dialog, setDialog] = useState<{ kind: "create" | "delete" | "merge"; row?: Row }>();
  const rows = (data?.rows ?? []).filter((r) => r.name.toLowerCase().includes(filter.toLowerCase()));
  const pager = usePager(rows, 25);
  const close = (changed: boolean) => { setDialog(undefined); if (changed) reload(); };

  return (
    <>
      <div class="page-head">
        <h1>References</h1>
        <button type="button" class="primary" onClick={() => setDialog({ kind: "create" })}>New branch or tag</button>
      </div>
      <div class="toolbar">
        <label>Filter by name <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder="e.g. etl/" /></label>
      </div>
      {error ? <Problem error={error} what="list references" /> : !data ? <Loading what="references" /> : (
        <>
          <Scroll label={"Branches and tags"}>
            <table class="list" id="refs">
              <caption class="sr-only">Branches and tags</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th><th scope="col">Type</th><th scope="col">Head</th><th scope="col">Last commit</th>
                  {data.retention && <><th scope="col">Age</th><th scope="col">Retention</th><th scope="col">Expires</th></>}
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                {pager.items.map((r) => (
                  <tr key={r.type + r.name}>
                    <th scope="row"><a href={href(["ref", r.name])}>{r.name}</a></th>
                    <td><span class={"badge " + r.type.toLowerCase()}>{r.type === "BRANCH" ? "branch" : "tag"}</span></td>
                    <td><a href={href(["log", r.name])}><code>{short(r.hash)}</code></a></td>
                    <td><Time t={r.lastCommit} /></td>
                    {data.retention && <>
                      <td>{r.age}</td>
                      <td>{r.retention.protected ? "protected" : r.retention.maxAge && r.retention.maxAge !== "0" ? `max age ${r.retention.maxAge}` : "never expires"}
                        {r.retention.maxAgeSource && <span class="muted"> ({r.retention.maxAgeSource})</span>}</td>
                      <td>{r.expired ? <strong class="warn">expired</strong> : r.expiresAt ? <Time t={r.expiresAt} /> : "—"}</td>
                    </>}
                    <td><div class="actions">
                      <a href={href(["log", r.name])}>History</a>
                      <a href={href(["diff"], { from: "main", to: r.name })}>Diff</a>
                      {r.type === "BRANCH" && <button type="button" onClick={() => setDialog({ kind: "merge", row: r })} aria-label={`Merge ${r.name}`}>Merge…</button>}
                      {r.name !== "main" && <button type="button" class="danger" onClick={() => setDialog({ kind: "delete", row: r })} aria-label={`Delete ${r.name}`}>Delete…</button>}
                    </div></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
          {pager.controls}
          {!rows.length && <p class="muted">No reference matches.</p>}
        </>
      )}
      {dialog?.kind === "create" && <CreateDialog refs={data?.rows ?? []} onClose={close} />}
      {dialog?.kind === "delete" && dialog.row && <DeleteDialog row={dialog.row} onClose={close} />}
      {dialog?.kind === "merge" && dialog.row && <MergeDialog source={dialog.row} refs={data?.rows ?? []} onClose={close} />}
    </>
  );
}

function CreateDialog({ refs, onClose }: { refs: Row[]; onClose: (changed: boolean) => void }) {
  const [name, setName] = useState("");
  const [type, setType] = useState<"BRANCH" | "TAG">("BRANCH");
  const [from, setFrom] = useState(refs.find((r) => r.name === "main")?.name ?? refs[0]?.name ?? "main");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true); setError(undefined);
    try {
      const src = (await nessie.reference(from)).reference;
      await nessie.create(name.trim(), type, src);
      onClose(true);
    } catch (err) { setError(err); setBusy(false); }
  };
  return (
    <Dialog title="New branch or tag" onClose={() => onClose(false)}>
      <form onSubmit={submit} class="form">
        <label>Name <input required value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="e.g. etl/daily" autoFocus /></label>
        <fieldset>
          <legend>Type</legend>
          <label class="inline"><input type="radio" name="type" checked={type === "BRANCH"} onChange={() => setType("BRANCH")} /> Branch</label>
          <label class="inline"><input type="radio" name="type" checked={type === "TAG"} onChange={() => setType("TAG")} /> Tag</label>
        </fieldset>
        <label>From
          <select value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
            {refs.map((r) => <option key={r.type + r.name} value={r.name}>{r.name}</option>)}
          </select>
        </label>
        {error !== undefined && <Problem error={error} what="create this reference" />}
        <div class="buttons">
          <button type="button" onClick={() => onClose(false)}>Cancel</button>
          <button type="submit" class="primary" disabled={busy || !name.trim()}>Create</button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteDialog({ row, onClose }: { row: Row; onClose: (changed: boolean) => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const ref: Ref = { type: row.type, name: row.name, hash: row.hash };
  const del = async () => {
    setBusy(true); setError(undefined);
    try { await nessie.remove(ref); onClose(true); } catch (err) { setError(err); setBusy(false); }
  };
  return (
    <Dialog title={`Delete ${row.type === "BRANCH" ? "branch" : "tag"} ${row.name}?`} onClose={() => onClose(false)}>
      <p>The reference <strong>{row.name}</strong> at <code>{short(row.hash)}</code> is deleted; commits only it reaches become
        garbage once its retention allows. A reference that moved since this page loaded is not deleted.</p>
      {error !== undefined && <Problem error={error} what={`delete ${row.name}`} />}
      <div class="buttons">
        <button type="button" onClick={() => onClose(false)} autoFocus>Cancel</button>
        <button type="button" class="danger" onClick={del} disabled={busy}>Delete {row.name}</button>
      </div>
    </Dialog>
  );
}

// MergeDialog plans the merge first (floe's merge-plans: a dry run through
// the merge engine) and merges only on confirmation, at exactly the heads
// the plan was made for: if either moved, the merge is refused as stale
// rather than merging something not shown.
function MergeDialog({ source, refs, onClose }: { source: Row; refs: Row[]; onClose: (changed: boolean) => void }) {
  const branches = refs.filter((r) => r.type === "BRANCH" && r.name !== source.name);
  const [target, setTarget] = useState(branches.find((r) => r.name === "main")?.name ?? branches[0]?.name ?? "");
  const [plan, setPlan] = useState<MergePlan>();
  const [message, setMessage] = useState(`Merge ${source.name} into ${target}`);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);

  const makePlan = async (e: Event) => {
    e.preventDefault();
    setBusy(true); setError(undefined); setPlan(undefined);
    try {
      setPlan(await floe.planMerge(source.name, target));
      setMessage(`Merge ${source.name} into ${target}`);
    } catch (err) { setError(err); }
    setBusy(false);
  };
  const merge = async () => {
    if (!plan) return;
    setBusy(true); setError(undefined);
    try {
      await nessie.merge({ type: "BRANCH", name: target, hash: plan.target.hash }, { type: "BRANCH", name: source.name, hash: plan.source.hash }, message);
      setDone(true);
    } catch (err) { setError(err); }
    setBusy(false);
  };

  return (
    <Dialog title={`Merge ${source.name}`} onClose={() => onClose(done)}>
      {done ? (
        <>
          <p role="status" class="note ok">Merged <strong>{source.name}</strong> into <strong>{target}</strong>.</p>
          <div class="buttons">
            <a href={href(["log", target])} onClick={() => onClose(true)}>History of {target}</a>
            <button type="button" class="primary" onClick={() => onClose(true)}>Close</button>
          </div>
        </>
      ) : (
        <>
          <form onSubmit={makePlan} class="form row">
            <label>Into branch
              <select value={target} onChange={(e) => { setTarget(e.currentTarget.value); setPlan(undefined); }}>
                {branches.map((r) => <option key={r.name} value={r.name}>{r.name}</option>)}
              </select>
            </label>
            <button type="submit" disabled={busy || !target}>Show merge plan</button>
          </form>
          {plan && <PlanReport plan={plan} />}
          {error !== undefined && <Problem error={error} what={`merge ${source.name} into ${target}`} />}
          {plan && (
            <div class="form">
              <label>Commit message <input value={message} onInput={(e) => setMessage(e.currentTarget.value)} /></label>
              <div class="buttons">
                <button type="button" onClick={() => onClose(false)}>Cancel</button>
                <button type="button" class="primary" onClick={merge} disabled={busy || !plan.mergeable}>Confirm merge into {target}</button>
              </div>
            </div>
          )}
        </>
      )}
    </Dialog>
  );
}

export function PlanReport({ plan }: { plan: MergePlan }) {
  const conflicts = plan.keys.filter((k) => k.conflict);
  return (
    <div class="plan" aria-live="polite">
      <p class={"note " + (plan.mergeable ? "ok" : "error")} id="merge-verdict">
        {plan.mergeable ? "Mergeable." : "Not mergeable."} {plan.keys.length} key(s) change; merge base <code>{short(plan.mergeBase)}</code>,
        source <code>{short(plan.source.hash)}</code>, target <code>{short(plan.target.hash)}</code>.
      </p>
      {conflicts.length > 0 && (
        <>
          <h3>Conflicts</h3>
          <ul>{conflicts.map((k) => <li key={k.key.join(".")}><code>{k.key.join(".")}</code>: {k.conflict!.type} {k.conflict!.message}</li>)}</ul>
        </>
      )}
      {plan.keys.length > 0 && (
        <details>
          <summary>Keys the merge writes ({plan.keys.length})</summary>
          <ul>{plan.keys.map((k) => <li key={k.key.join(".")}><code>{k.key.join(".")}</code>{k.conflict ? " (conflict)" : ""}</li>)}</ul>
        </details>
      )}
      {plan.tables.length > 0 && (
        <>
          <h3>Tables changed on both sides</h3>
          <Scroll label={"Classification of each table"}>
            <table class="list" id="merge-classification">
              <caption class="sr-only">Classification of each table changed on both sides</caption>
              <thead><tr><th scope="col">Table</th><th scope="col">Classification</th><th scope="col">Action</th><th scope="col">Snapshots</th><th scope="col">Reason</th></tr></thead>
              <tbody>
                {plan.tables.map((t) => (
                  <tr key={t.key.join(".")}>
                    <th scope="row"><code>{t.key.join(".")}</code></th>
                    <td><span class="badge">{t.classification?.class ?? "—"}</span></td>
                    <td>{t.action}</td>
                    <td>{t.snapshots}</td>
                    <td>{t.reason || t.classification?.reason}
                      {t.classification && <ClassificationDetails c={t.classification} />}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        </>
      )}
      {plan.tables.length === 0 && plan.keys.length > 0 && <p class="muted">No table changed on both sides: the merge is at key level only (fast-forward of each key).</p>}
    </div>
  );
}

// ClassificationDetails is what each side of a table did since the merge
// base, as the merge engine read it (merge/classify/README.md).
function ClassificationDetails({ c }: { c: any }) {
  const side = (label: string, x: any) => x && (
    <li>{label}: {x.snapshots?.length ?? 0} snapshot(s)
      {x.dataFiles && <>, +{x.dataFiles.addedCount} / −{x.dataFiles.removedCount} data files, +{x.dataFiles.addedRecords} / −{x.dataFiles.removedRecords} records</>}
      {x.partitions?.length > 0 && <> in {x.partitions.map((p: any) => p.path || "(unpartitioned)").join(", ")}</>}
      {x.structuralChanges?.length > 0 && <>; structural: {x.structuralChanges.join(", ")}</>}
    </li>
  );
  return (
    <details>
      <summary>both sides</summary>
      <ul class="small">
        {side("source", c.source)}
        {side("target", c.target)}
        {c.commonPartitions?.length > 0 && <li>common partitions: {c.commonPartitions.map((p: any) => p.path).join(", ")}</li>}
        {c.conflictingFiles?.length > 0 && <li>conflicting files: {c.conflictingFiles.length}</li>}
      </ul>
    </details>
  );
}
