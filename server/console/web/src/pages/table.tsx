// A table or a view on a reference, from its Iceberg metadata (Iceberg
// REST loadTable / loadView on the warehouse at that reference).

import { iceberg, keyString } from "../api";
import { KV, Loading, Problem, Scroll, Section, Time, href, useLoad, usePager } from "../ui";

export type Field = { id: number; path: string; type: string; required: boolean; doc?: string; depth: number };

function typeName(t: any): string {
  if (typeof t === "string") return t;
  if (t?.type === "struct") return "struct";
  if (t?.type === "list") return `list<${typeName(t.element)}>`;
  if (t?.type === "map") return `map<${typeName(t.key)}, ${typeName(t.value)}>`;
  return JSON.stringify(t);
}

// flatten lists a schema's fields depth first with their ids, nested
// struct, list and map fields under their parent's path.
function flatten(fields: any[], prefix: string, depth: number, out: Field[]) {
  for (const f of fields ?? []) {
    const path = prefix + f.name;
    out.push({ id: f.id, path, type: typeName(f.type), required: !!f.required, doc: f.doc, depth });
    nested(f.type, path, depth + 1, out);
  }
}

function nested(t: any, path: string, depth: number, out: Field[]) {
  if (typeof t !== "object" || !t) return;
  if (t.type === "struct") flatten(t.fields, path + ".", depth, out);
  if (t.type === "list") {
    out.push({ id: t["element-id"], path: path + ".element", type: typeName(t.element), required: !!t["element-required"], depth });
    nested(t.element, path + ".element", depth + 1, out);
  }
  if (t.type === "map") {
    out.push({ id: t["key-id"], path: path + ".key", type: typeName(t.key), required: true, depth });
    nested(t.key, path + ".key", depth + 1, out);
    out.push({ id: t["value-id"], path: path + ".value", type: typeName(t.value), required: !!t["value-required"], depth });
    nested(t.value, path + ".value", depth + 1, out);
  }
}

export function schemaFields(schema: any): Field[] {
  const out: Field[] = [];
  flatten(schema?.fields, "", 0, out);
  return out;
}

export function fieldsOf(md: any): Field[] {
  const s = (md?.schemas ?? []).find((x: any) => x["schema-id"] === md["current-schema-id"]) ?? md?.schema;
  return schemaFields(s);
}

function SchemaTable({ schema, id }: { schema: any; id?: string }) {
  const fields = schemaFields(schema);
  const ids: number[] = schema?.["identifier-field-ids"] ?? [];
  return (
    <Scroll label={`Schema ${schema?.["schema-id"] ?? ""}`}>
      <table class="list" id={id}>
        <caption class="sr-only">Schema {schema?.["schema-id"]}</caption>
        <thead><tr><th scope="col">Field id</th><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Doc</th></tr></thead>
        <tbody>
          {fields.map((f) => (
            <tr key={f.id}>
              <td class="num">{f.id}</td>
              <th scope="row" style={{ paddingLeft: `${0.5 + f.depth * 1.2}em` }}><code>{f.path}</code>{ids.includes(f.id) && <span class="badge">identifier</span>}</th>
              <td><code>{f.type}</code></td>
              <td>{f.required ? "required" : "optional"}</td>
              <td>{f.doc ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

export function TablePage({ at: ref, k }: { at: string; k: string[] }) {
  const { data, error } = useLoad(() => iceberg.table(ref, k), [ref, k.join("\u0000")]);
  const name = keyString(k);
  const md = data?.metadata;
  const snapshots = [...(md?.snapshots ?? [])].sort((a: any, b: any) => b["timestamp-ms"] - a["timestamp-ms"]);
  const snapPager = usePager(snapshots, 20);
  const logPager = usePager([...(md?.["metadata-log"] ?? [])].reverse(), 20);
  return (
    <>
      <div class="page-head">
        <h1><span class="muted">Table</span> {name} <span class="muted">on {ref}</span></h1>
        <nav class="actions" aria-label="This table">
          <a href={href(["log", ref.startsWith("@") ? "main" : ref], { path: name })}>Commits touching it</a>
          <a href={href(["ref", ref.startsWith("@") ? "main" : ref])}>Back to {ref.startsWith("@") ? "main" : ref}</a>
        </nav>
      </div>
      {error ? <Problem error={error} what={`read ${name} on ${ref}`} /> : !md ? <Loading what={name} /> : (
        <>
          <dl class="facts">
            <dt>Location</dt><dd><code>{md.location}</code></dd>
            <dt>Table UUID</dt><dd><code>{md["table-uuid"]}</code></dd>
            <dt>Format version</dt><dd>{md["format-version"]}</dd>
            <dt>Current snapshot</dt><dd>{md["current-snapshot-id"] ?? "none"}</dd>
            <dt>Last updated</dt><dd><Time t={md["last-updated-ms"]} /></dd>
            <dt>Metadata file</dt><dd><code>{data!["metadata-location"]}</code></dd>
          </dl>
          <Section title={`Schema ${md["current-schema-id"]}`} id="schema">
            <SchemaTable schema={(md.schemas ?? []).find((s: any) => s["schema-id"] === md["current-schema-id"]) ?? md.schema} id="schema-fields" />
            {(md.schemas ?? []).length > 1 && (
              <details>
                <summary>Earlier schemas ({md.schemas.length - 1})</summary>
                {md.schemas.filter((s: any) => s["schema-id"] !== md["current-schema-id"]).map((s: any) => (
                  <div key={s["schema-id"]}><h3>Schema {s["schema-id"]}</h3><SchemaTable schema={s} /></div>
                ))}
              </details>
            )}
          </Section>
          <Section title="Partition spec" id="partitioning">
            <SpecList md={md} />
          </Section>
          <Section title="Sort order" id="sort-order">
            <SortList md={md} />
          </Section>
          <Section title="Properties" id="properties"><KV map={md.properties} caption="Table properties" /></Section>
          <Section title={`Snapshots (${snapshots.length})`} id="snapshots">
            {snapshots.length === 0 ? <p class="muted">No snapshot yet.</p> : (
              <>
                <Scroll label={"Snapshots"}>
                  <table class="list" id="snapshot-list">
                    <caption class="sr-only">Snapshots, newest first</caption>
                    <thead><tr><th scope="col">Snapshot id</th><th scope="col">Time</th><th scope="col">Operation</th><th scope="col">Added records</th><th scope="col">Total records</th><th scope="col">Summary</th></tr></thead>
                    <tbody>
                      {snapPager.items.map((s: any) => (
                        <tr key={s["snapshot-id"]} class={s["snapshot-id"] === md["current-snapshot-id"] ? "current" : ""}>
                          <th scope="row" class="num">{s["snapshot-id"]}{s["snapshot-id"] === md["current-snapshot-id"] && <span class="badge">current</span>}
                            {s["parent-snapshot-id"] !== undefined && <div class="muted small">parent {s["parent-snapshot-id"]}</div>}</th>
                          <td><Time t={s["timestamp-ms"]} /></td>
                          <td>{s.summary?.operation}</td>
                          <td class="num">{s.summary?.["added-records"] ?? ""}</td>
                          <td class="num">{s.summary?.["total-records"] ?? ""}</td>
                          <td><details><summary>summary</summary><KV map={s.summary} caption={`Summary of snapshot ${s["snapshot-id"]}`} /></details></td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </Scroll>
                {snapPager.controls}
              </>
            )}
          </Section>
          <Section title="Table refs" id="table-refs">
            <KV map={Object.fromEntries(Object.entries(md.refs ?? {}).map(([n, r]: [string, any]) => [n, `${r.type} → ${r["snapshot-id"]}`]))} caption="Table-level branches and tags" empty="No table-level refs." />
          </Section>
          <Section title="Metadata log" id="metadata-log">
            {!logPager.items.length ? <p class="muted">No earlier metadata file.</p> : (
              <>
                <Scroll label={"Metadata log"}>
                  <table class="list">
                    <caption class="sr-only">Earlier metadata files, newest first</caption>
                    <thead><tr><th scope="col">Time</th><th scope="col">Metadata file</th></tr></thead>
                    <tbody>{logPager.items.map((l: any) => <tr key={l["metadata-file"]}><td><Time t={l["timestamp-ms"]} /></td><td><code>{l["metadata-file"]}</code></td></tr>)}</tbody>
                  </table>
                </Scroll>
                {logPager.controls}
              </>
            )}
          </Section>
        </>
      )}
    </>
  );
}

function fieldName(md: any, id: number): string {
  return fieldsOf(md).find((f) => f.id === id)?.path ?? `field ${id}`;
}

function SpecList({ md }: { md: any }) {
  const spec = (md["partition-specs"] ?? []).find((s: any) => s["spec-id"] === md["default-spec-id"]);
  if (!spec || !spec.fields?.length) return <p class="muted">Unpartitioned (spec {md["default-spec-id"] ?? 0}).</p>;
  return (
    <Scroll label={"Partition spec"}>
      <table class="list" id="partition-fields">
        <caption class="sr-only">Partition spec {spec["spec-id"]}</caption>
        <thead><tr><th scope="col">Partition field id</th><th scope="col">Name</th><th scope="col">Source</th><th scope="col">Transform</th></tr></thead>
        <tbody>{spec.fields.map((f: any) => (
          <tr key={f["field-id"]}><td class="num">{f["field-id"]}</td><th scope="row"><code>{f.name}</code></th><td><code>{fieldName(md, f["source-id"])}</code> ({f["source-id"]})</td><td><code>{f.transform}</code></td></tr>
        ))}</tbody>
      </table>
    </Scroll>
  );
}

function SortList({ md }: { md: any }) {
  const order = (md["sort-orders"] ?? []).find((s: any) => s["order-id"] === md["default-sort-order-id"]);
  if (!order || !order.fields?.length) return <p class="muted">Unsorted.</p>;
  return (
    <ol>{order.fields.map((f: any, i: number) => (
      <li key={i}><code>{f.transform}({fieldName(md, f["source-id"])})</code> {f.direction} {f["null-order"]}</li>
    ))}</ol>
  );
}

export function ViewPage({ at: ref, k }: { at: string; k: string[] }) {
  const { data, error } = useLoad(() => iceberg.view(ref, k), [ref, k.join("\u0000")]);
  const name = keyString(k);
  const md = data?.metadata;
  const versions = [...(md?.versions ?? [])].sort((a: any, b: any) => b["version-id"] - a["version-id"]);
  const pager = usePager(versions, 10);
  return (
    <>
      <div class="page-head">
        <h1><span class="muted">View</span> {name} <span class="muted">on {ref}</span></h1>
      </div>
      {error ? <Problem error={error} what={`read ${name} on ${ref}`} /> : !md ? <Loading what={name} /> : (
        <>
          <dl class="facts">
            <dt>Location</dt><dd><code>{md.location}</code></dd>
            <dt>View UUID</dt><dd><code>{md["view-uuid"]}</code></dd>
            <dt>Current version</dt><dd>{md["current-version-id"]}</dd>
            <dt>Metadata file</dt><dd><code>{data!["metadata-location"]}</code></dd>
          </dl>
          <Section title="Versions" id="view-versions">
            {pager.items.map((v: any) => (
              <article key={v["version-id"]} class={"version" + (v["version-id"] === md["current-version-id"] ? " current" : "")}>
                <h3>Version {v["version-id"]} {v["version-id"] === md["current-version-id"] && <span class="badge">current</span>}</h3>
                <p class="muted"><Time t={v["timestamp-ms"]} /> · schema {v["schema-id"]} · namespace {(v["default-namespace"] ?? []).join(".")}</p>
                {(v.representations ?? []).map((r: any, i: number) => (
                  <figure key={i}>
                    <figcaption>{r.type} ({r.dialect})</figcaption>
                    <pre class="sql"><code>{r.sql}</code></pre>
                  </figure>
                ))}
              </article>
            ))}
            {pager.controls}
          </Section>
          <Section title="Schema" id="view-schema">
            <SchemaTable schema={(md.schemas ?? []).find((s: any) => s["schema-id"] === versions.find((v: any) => v["version-id"] === md["current-version-id"])?.["schema-id"]) ?? md.schemas?.[0]} />
          </Section>
          <Section title="Properties" id="view-properties"><KV map={md.properties} caption="View properties" /></Section>
        </>
      )}
    </>
  );
}
