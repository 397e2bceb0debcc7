// The diff between two references or commits: which keys were added,
// removed or changed (Nessie's diff, paged by the server), and for a table
// what changed in Iceberg terms, from its metadata on both sides (Iceberg
// REST, pinned at the two commits the diff was computed between).

import { useState } from "preact/hooks";
import { Content, iceberg, keyString, nessie } from "../api";
import { href, MoreButton, Problem, short, useLoad, useTokenPages } from "../ui";
import { fieldsOf } from "./table";

export function DiffPage({ from, to }: { from?: string; to?: string }) {
  const [f, setF] = useState(from ?? "main");
  const [t, setT] = useState(to ?? "");
  const ready = !!(from && to);
  const list = useTokenPages(async (token) => {
    if (!ready) return { items: [] as any[] };
    const p = await nessie.diff(from!, to!, token);
    return { items: p.diffs.map((d) => ({ ...d, fromRef: p.effectiveFromReference, toRef: p.effectiveToReference })), hasMore: p.hasMore, token: p.token };
  }, [from, to]);
  const first = list.items[0];

  return (
    <>
      <h1>Diff</h1>
      <form class="toolbar" onSubmit={(e) => { e.preventDefault(); location.hash = href(["diff"], { from: f.trim(), to: t.trim() }).slice(1); }}>
        <label>From <input required value={f} onInput={(e) => setF(e.currentTarget.value)} placeholder="main, a tag, or @hash" /></label>
        <label>To <input required value={t} onInput={(e) => setT(e.currentTarget.value)} placeholder="etl/daily" /></label>
        <button type="submit">Compare</button>
      </form>
      {!ready ? <p class="muted">Name two references or commits (<code>@hash</code>) to compare.</p>
        : list.error !== undefined ? <Problem error={list.error} what={`compare ${from} and ${to}`} /> : (
          <>
            {first && <p class="muted">From <code>{short(first.fromRef.hash)}</code> to <code>{short(first.toRef.hash)}</code>.</p>}
            <ul class="diffs" id="diffs">
              {list.items.map((d) => (
                <DiffEntry key={keyString(d.key)} k={d.key.elements} from={d.from} to={d.to} fromHash={d.fromRef.hash} toHash={d.toRef.hash} />
              ))}
            </ul>
            {list.loading && <p class="muted" role="status" data-loading>Loading the diff…</p>}
            {!list.loading && !list.items.length && <p class="note ok">No differences.</p>}
            <MoreButton hasMore={list.hasMore} loading={list.loading} more={list.more} what="changes" />
          </>
        )}
    </>
  );
}

const kindOf = (c?: Content) => c?.type === "ICEBERG_TABLE" ? "table" : c?.type === "ICEBERG_VIEW" ? "view" : c?.type === "NAMESPACE" ? "namespace" : c?.type ?? "";

function DiffEntry({ k, from, to, fromHash, toHash }: { k: string[]; from?: Content; to?: Content; fromHash: string; toHash: string }) {
  const status = !from ? "added" : !to ? "removed" : "changed";
  const kind = kindOf(to ?? from);
  const side = to ? toHash : fromHash;
  return (
    <li class={"diff " + status}>
      <div class="diff-line">
        <span class={"status " + status}>{status}</span> <span class={"badge " + kind}>{kind}</span>{" "}
        {kind === "table" || kind === "view" ? <a href={href([kind, "@" + side, ...k])}><code>{keyString(k)}</code></a> : <code>{keyString(k)}</code>}
      </div>
      {kind === "table" && <TableChanges k={k} fromHash={from ? fromHash : undefined} toHash={to ? toHash : undefined} />}
      {kind === "view" && from && to && from.versionId !== to.versionId && <p class="muted">View version {from.versionId} → {to.versionId}</p>}
    </li>
  );
}

function currentSnapshot(md: any) {
  return md?.snapshots?.find((s: any) => s["snapshot-id"] === md["current-snapshot-id"]);
}

function TableChanges({ k, fromHash, toHash }: { k: string[]; fromHash?: string; toHash?: string }) {
  const { data, error } = useLoad(async () => {
    const [a, b] = await Promise.all([
      fromHash ? iceberg.table("@" + fromHash, k).then((r) => r.metadata) : Promise.resolve(undefined),
      toHash ? iceberg.table("@" + toHash, k).then((r) => r.metadata) : Promise.resolve(undefined),
    ]);
    return { a, b };
  }, [k.join("\u0000"), fromHash, toHash]);
  if (error) return <Problem error={error} what={`read ${keyString(k)}`} />;
  if (!data) return <p class="muted" data-loading>Reading the table's metadata…</p>;
  const { a, b } = data;
  const idsA = new Set<number>((a?.snapshots ?? []).map((s: any) => s["snapshot-id"]));
  const idsB = new Set<number>((b?.snapshots ?? []).map((s: any) => s["snapshot-id"]));
  const added = (b?.snapshots ?? []).filter((s: any) => !idsA.has(s["snapshot-id"]));
  const removed = (a?.snapshots ?? []).filter((s: any) => !idsB.has(s["snapshot-id"]));
  const recA = currentSnapshot(a)?.summary?.["total-records"], recB = currentSnapshot(b)?.summary?.["total-records"];
  const changes: string[] = [];
  if (a && b) {
    if (a["current-schema-id"] !== b["current-schema-id"]) {
      const fa = new Map(fieldsOf(a).map((f) => [f.id, f])), fb = new Map(fieldsOf(b).map((f) => [f.id, f]));
      const addedF = [...fb.values()].filter((f) => !fa.has(f.id)).map((f) => `+${f.path} (${f.type})`);
      const droppedF = [...fa.values()].filter((f) => !fb.has(f.id)).map((f) => `−${f.path}`);
      const changedF = [...fb.values()].filter((f) => fa.has(f.id) && (fa.get(f.id)!.type !== f.type || fa.get(f.id)!.path !== f.path))
        .map((f) => `${fa.get(f.id)!.path} ${fa.get(f.id)!.type} → ${f.path} ${f.type}`);
      changes.push(`schema ${a["current-schema-id"]} → ${b["current-schema-id"]}: ${[...addedF, ...droppedF, ...changedF].join(", ") || "reordered"}`);
    }
    if (a["default-spec-id"] !== b["default-spec-id"]) changes.push(`partition spec ${a["default-spec-id"]} → ${b["default-spec-id"]}`);
    if (a["default-sort-order-id"] !== b["default-sort-order-id"]) changes.push(`sort order ${a["default-sort-order-id"]} → ${b["default-sort-order-id"]}`);
    const pa = a.properties ?? {}, pb = b.properties ?? {};
    const pk = [...new Set([...Object.keys(pa), ...Object.keys(pb)])].filter((x) => pa[x] !== pb[x]);
    if (pk.length) changes.push(`properties changed: ${pk.join(", ")}`);
  }
  return (
    <div class="iceberg-changes">
      <ul>
        {(recA !== undefined || recB !== undefined) && <li>records {recA ?? 0} → <strong>{recB ?? 0}</strong></li>}
        {added.length > 0 && <li>{added.length} snapshot(s) added: {added.map((s: any) => `${s["snapshot-id"]} (${s.summary?.operation ?? "?"}, +${s.summary?.["added-records"] ?? 0} records)`).join("; ")}</li>}
        {removed.length > 0 && <li>{removed.length} snapshot(s) removed</li>}
        {changes.map((c) => <li key={c}>{c}</li>)}
        {a && b && !added.length && !removed.length && !changes.length && <li class="muted">metadata changed (no snapshot, schema, spec, sort order or property change)</li>}
      </ul>
    </div>
  );
}
