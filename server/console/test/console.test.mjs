// The console in a real browser: Debian's Chromium driven by
// playwright-core against a real floe (started by run.sh with data written
// by iceberg-go, see seed/main.go). Every step writes a screenshot under
// FLOE_SCREENSHOTS.
//
// Environment: FLOE_URL (the server), FLOE_ADMIN_TOKEN (groups admins and
// publishers: may do everything), FLOE_VIEWER_TOKEN (no group: reads
// only), FLOE_REVIEWER_TOKEN (group reviewers: reviews merge requests),
// FLOE_OAUTH_CLIENT and FLOE_OAUTH_SECRET (an OAuth client, a
// reader), FLOE_SCREENSHOTS (a directory), CHROMIUM (the executable).

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

const base = process.env.FLOE_URL;
const adminToken = process.env.FLOE_ADMIN_TOKEN;
const viewerToken = process.env.FLOE_VIEWER_TOKEN;
const reviewerToken = process.env.FLOE_REVIEWER_TOKEN;
const shots = process.env.FLOE_SCREENSHOTS ?? "bin/console-screenshots";
assert.ok(base && adminToken && viewerToken && reviewerToken, "FLOE_URL and FLOE_{ADMIN,VIEWER,REVIEWER}_TOKEN must be set (run server/console/test/run.sh)");
mkdirSync(shots, { recursive: true });

const LAPTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--disable-gpu", "--disable-dev-shm-usage"] });
});
after(async () => { await browser?.close(); });

// session opens a page signed in with token through the sign-in form,
// failing the test on any script error the page raises.
async function session(token, viewport = LAPTOP, options = {}) {
  const context = await browser.newContext({ viewport, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000); // a busy 2-core CI machine
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e));
  await page.goto(`${base}/ui/#/signin`);
  await page.getByLabel("Token", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Use this token" }).click();
  await page.getByRole("heading", { name: "References" }).waitFor();
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, name + ".png"), fullPage: true });
}

// api calls floe's APIs directly, to check what the console did.
async function api(path, token = adminToken) {
  const res = await fetch(base + path, { headers: { Authorization: "Bearer " + token } });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

describe("console", () => {
  let page;
  before(async () => { page = await session(adminToken); });
  after(async () => { assert.deepEqual(page.errors, [], "the page raised script errors"); await page.context().close(); });

  test("serves the page from the binary, with nothing from another origin", async () => {
    const res = await fetch(base + "/ui/");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-security-policy"), /default-src 'none'/);
    const html = await res.text();
    assert.doesNotMatch(html, /https?:\/\//, "the page loads nothing from elsewhere");
  });

  test("lists references with heads, ages and retention", async () => {
    const refs = page.locator("#refs");
    for (const name of ["main", "ingest/daily", "ingest/hotfix", "v1", "users/alex/scratch"]) {
      await refs.getByRole("rowheader", { name, exact: true }).waitFor();
    }
    const etl = refs.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "ingest/daily", exact: true }) });
    await assert.doesNotReject(etl.getByText("max age").first().waitFor(), "ingest/daily shows its retention");
    await shot(page, "01-references");
  });

  test("browses a branch", async () => {
    await page.locator("#refs").getByRole("link", { name: "ingest/daily", exact: true }).click();
    await page.getByRole("heading", { name: /ingest\/daily/ }).waitFor();
    await page.getByRole("button", { name: "sales", exact: true }).click();
    const entries = page.locator("#entries");
    for (const t of ["sales.orders", "sales.customers", "sales.returns", "sales.big_orders"]) {
      await entries.getByRole("link", { name: t, exact: true }).waitFor();
    }
    await shot(page, "02-branch-contents");
  });

  test("opens a table: schema with field ids, partitioning, snapshots", async () => {
    await page.locator("#entries").getByRole("link", { name: "sales.orders", exact: true }).click();
    await page.getByRole("heading", { name: /Table sales\.orders/ }).waitFor();
    const fields = page.locator("#schema-fields tbody tr");
    await fields.first().waitFor();
    const rows = await fields.allInnerTexts();
    assert.deepEqual(rows.map((r) => r.split("\t").slice(0, 3).join(" ").trim()),
      ["1 id long", "2 region string", "3 amount double"]);
    assert.match(await page.locator("#partition-fields").innerText(), /region.*identity/s);
    const snaps = page.locator("#snapshot-list > tbody > tr");
    assert.equal(await snaps.count(), 4, "two appends on main and two on ingest/daily");
    // Snapshot ids are int64s: the page must show them exactly.
    const md = (await api("/v1/lake%40ingest%2Fdaily/namespaces/sales/tables/orders")).metadata;
    const text = await page.locator("#snapshot-list").innerText();
    const raw = await (await fetch(base + "/v1/lake%40ingest%2Fdaily/namespaces/sales/tables/orders", { headers: { Authorization: "Bearer " + adminToken } })).text();
    const current = /"current-snapshot-id"\s*:\s*(-?\d+)/.exec(raw)[1];
    assert.ok(text.includes(current), `the current snapshot id ${current} is shown exactly`);
    assert.equal(md.snapshots.length, 4);
    const newest = snaps.first();
    await newest.locator("summary").click();
    await newest.getByText("added-records", { exact: true }).waitFor();
    await shot(page, "03-table");
  });

  test("shows a view's SQL and versions", async () => {
    await page.goto(`${base}/ui/#/view/main/sales/big_orders`);
    await page.getByText("SELECT id, amount FROM sales.orders WHERE amount > 25").waitFor();
    await page.getByText("SELECT id, amount FROM sales.orders WHERE amount > 15").waitFor();
    assert.equal(await page.locator("article.version").count(), 2);
    await shot(page, "04-view");
  });

  test("draws the history of a branch as a graph, and filters it by table", async () => {
    await page.goto(`${base}/ui/#/log/main`);
    const commits = page.locator("#commits > li");
    await page.getByText("Merge ingest/hotfix into main").waitFor();
    assert.ok(await commits.count() >= 3);
    // The merge commit's row draws two lanes.
    const merge = commits.filter({ hasText: "Merge ingest/hotfix into main" });
    const lanes = await merge.locator("div.lanes").boundingBox();
    assert.ok(lanes.width >= 28, "a merge draws its second parent's lane");
    await merge.getByText(/operation/).click();
    await merge.getByText("sales.customers").waitFor();
    await shot(page, "05-history");
    // Another reference, picked on the page.
    await page.getByLabel("Reference", { exact: true }).fill("ingest/daily");
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByRole("heading", { name: "History of ingest/daily" }).waitFor();
    await page.getByText("iceberg: update sales.customers (schema-change)").waitFor();
    assert.ok(await commits.count() >= 5);
    // Only the commit that touched sales.returns.
    await page.getByLabel("Table or key prefix").fill("sales.returns");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByRole("link", { name: "Clear filter" }).waitFor();
    await page.waitForFunction(() => !document.querySelector("[data-loading]"));
    assert.deepEqual(await page.locator("#commits .message").allInnerTexts(), ["iceberg: create table sales.returns"]);
  });

  test("shows a diff with Iceberg-level changes", async () => {
    await page.goto(`${base}/ui/#/diff?from=main&to=ingest%2Fdaily`);
    const diffs = page.locator("#diffs");
    const orders = diffs.locator("li").filter({ hasText: "sales.orders" });
    await orders.getByText("2 snapshot(s) added").waitFor();
    await orders.getByText(/records 5 → 7/).waitFor();
    await diffs.locator("li.added").filter({ hasText: "sales.returns" }).waitFor();
    await diffs.locator("li").filter({ hasText: "sales.customers" }).getByText(/schema 0 → 1: \+email/).waitFor();
    await shot(page, "06-diff");
  });

  test("merges a branch after showing its plan", async () => {
    await page.goto(`${base}/ui/#/`);
    await page.getByRole("button", { name: "Merge ingest/daily" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Into branch").selectOption("main");
    await dialog.getByRole("button", { name: "Show merge plan" }).click();
    await dialog.getByText("Mergeable.").waitFor();
    // sales.orders changed on both sides, in different partitions.
    const orders = dialog.locator("#merge-classification tr").filter({ hasText: "sales.orders" });
    await orders.getByText("disjoint", { exact: true }).waitFor();
    await orders.getByText("cherry-pick", { exact: true }).waitFor();
    await orders.getByText("both sides").click();
    await orders.getByText(/source: 2 snapshot\(s\), \+3 \/ −0 data files, \+3 \/ −0 records/).waitFor();
    await orders.getByText(/target: 1 snapshot\(s\).* in region=latam/).waitFor();
    await shot(page, "07-merge-plan");
    await dialog.getByRole("button", { name: "Confirm merge into main" }).click();
    await dialog.getByText(/Merged ingest\/daily into main/).waitFor();
    await dialog.getByRole("button", { name: "Close", exact: true }).click();
    const content = await api("/api/v2/trees/main/contents/sales.returns");
    assert.equal(content.content.type, "ICEBERG_TABLE", "sales.returns reached main");
    await page.goto(`${base}/ui/#/log/main`);
    await page.getByText("Merge ingest/daily into main").waitFor();
    await shot(page, "08-history-after-merge");
  });

  test("deletes a branch after a confirmation", async () => {
    await page.goto(`${base}/ui/#/`);
    await page.getByRole("button", { name: "Delete users/alex/scratch" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete users/alex/scratch" }).click();
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await page.locator("#refs").getByRole("rowheader", { name: "users/alex/scratch" }).waitFor({ state: "detached" });
  });

  test("creates a branch", async () => {
    await page.getByRole("button", { name: "New branch or tag" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Name").fill("feature/console");
    await dialog.getByRole("button", { name: "Create" }).click();
    await page.locator("#refs").getByRole("rowheader", { name: "feature/console", exact: true }).waitFor();
  });

  test("works from the keyboard", async () => {
    // A fresh load, so focus starts at the top of the document.
    await page.goto(`${base}/ui/#/`);
    await page.reload();
    await page.locator("#refs").waitFor();
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Contents");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: /Branch main/ }).waitFor();
    // Every form control has a name a screen reader can say.
    for (const path of ["#/", "#/diff", "#/log/main", "#/ref/main", "#/queue", "#/activity", "#/signin"]) {
      await page.goto(`${base}/ui/${path}`);
      await page.locator("main h1").waitFor();
      const unlabeled = await page.evaluate(() => [...document.querySelectorAll("input, select, button")]
        .filter((el) => !(el.labels?.length || el.getAttribute("aria-label") || el.textContent.trim()))
        .map((el) => el.outerHTML));
      assert.deepEqual(unlabeled, [], `unlabeled controls on ${path}`);
    }
  });
});

describe("the activity view", () => {
  let page;
  before(async () => { page = await session(adminToken); });
  after(async () => { assert.deepEqual(page.errors, []); await page.context().close(); });

  test("lists the recent events, filtered by type and branch", async () => {
    await page.goto(`${base}/ui/#/activity`);
    const rows = page.locator("#activity tbody tr");
    await rows.first().waitFor();
    const types = await page.locator("#activity tbody th").allTextContents();
    assert.ok(types.includes("table.created") && types.includes("merge"), `recent events: ${types}`);
    await shot(page, "activity");
    await page.getByLabel("Type").selectOption("branch.*");
    await page.waitForFunction(() => [...document.querySelectorAll("#activity tbody th")].every((th) => th.textContent.startsWith("branch.")));
    await page.getByLabel("Branch or tag").fill("main");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/ref=main/);
    // The filtered page replaces the rows the type filter left: wait until
    // every row shown is on main (the old rows, or an empty table while it
    // loads, would otherwise be read).
    await page.waitForFunction(() => {
      const cells = [...document.querySelectorAll("#activity tbody td:nth-child(3)")];
      return cells.length > 0 && cells.every((td) => td.textContent === "main");
    }).catch(() => {});
    const refs = await page.locator("#activity tbody td:nth-child(3)").allTextContents();
    assert.ok(refs.length > 0 && refs.every((r) => r === "main"), `filtered to main: ${refs}`);
  });

  test("follows the feed live", async () => {
    await page.goto(`${base}/ui/#/activity?types=namespace.*`);
    await page.locator("#activity tbody tr, #activity-empty").first().waitFor();
    await page.getByRole("button", { name: "Live" }).click();
    await page.locator("#activity-live").waitFor();
    const res = await fetch(`${base}/v1/lake@ingest%2Fdaily/namespaces`, {
      method: "POST", headers: { Authorization: "Bearer " + adminToken, "Content-Type": "application/json" },
      body: JSON.stringify({ namespace: ["activity_live"] }),
    });
    assert.equal(res.status, 200, await res.text());
    await page.locator("#activity tbody tr", { hasText: "activity_live" }).waitFor();
    const first = page.locator("#activity tbody tr").first();
    assert.equal(await first.locator("th").textContent(), "namespace.created");
    assert.equal(await first.locator("td").nth(1).textContent(), "ingest/daily");
    await shot(page, "activity-live");
    await page.getByRole("button", { name: "Stop live tail" }).click();
    await page.locator("#activity-live").waitFor({ state: "detached" });
  });

  test("shows a reader only what the policy lets it read", async () => {
    // The catalog's own events (a GC run here) need admin.events.read:
    // the admin sees the run, the viewer only the branches' events.
    const res = await fetch(`${base}/api/floe/v1/gc`, {
      method: "POST", headers: { Authorization: "Bearer " + adminToken, "Content-Type": "application/json" }, body: "{}",
    });
    assert.ok(res.status < 300, `gc: ${res.status} ${await res.text()}`);
    for (let i = 0; i < 100 && (await api("/api/floe/v1/events?types=gc.completed")).events.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 200)); // the run finishes in the background
    }
    assert.equal((await api("/api/floe/v1/events?types=gc.completed", viewerToken)).events.length, 0, "the viewer reads no GC run");
    await page.goto(`${base}/ui/#/activity?types=gc.completed`);
    await page.locator("#activity tbody tr", { hasText: "file(s) deleted" }).first().waitFor();
    const viewer = await session(viewerToken);
    await viewer.goto(`${base}/ui/#/activity?types=gc.completed`);
    await viewer.locator("#activity-empty").waitFor();
    await viewer.goto(`${base}/ui/#/activity`);
    await viewer.locator("#activity tbody tr").first().waitFor();
    assert.deepEqual(viewer.errors, []);
    await viewer.context().close();
  });
});

describe("a read-only principal", () => {
  let page;
  before(async () => { page = await session(viewerToken); });
  after(async () => { assert.deepEqual(page.errors, []); await page.context().close(); });

  test("reads the catalog", async () => {
    await page.locator("#refs").getByRole("rowheader", { name: "main", exact: true }).waitFor();
  });

  test("is refused a merge, and told so", async () => {
    // ingest/daily has commits ingest/hotfix lacks; only group ingest
    // may write ingest/ branches.
    await page.getByRole("button", { name: "Merge ingest/daily" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Into branch").selectOption("ingest/hotfix");
    await dialog.getByRole("button", { name: "Show merge plan" }).click();
    await dialog.getByRole("alert").getByText("Not permitted.").waitFor();
    assert.equal(await dialog.getByRole("button", { name: /Confirm merge/ }).count(), 0, "no merge can be confirmed");
    await shot(page, "09-refused-merge");
    await dialog.getByRole("button", { name: "Close dialog" }).click();
  });

  test("is refused deleting a branch; the branch stays", async () => {
    await page.getByRole("button", { name: "Delete ingest/hotfix" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("button", { name: "Delete ingest/hotfix" }).click();
    await dialog.getByRole("alert").getByText("Not permitted.").waitFor();
    await api("/api/v2/trees/ingest%2Fhotfix", viewerToken);
  });
});

// The merge queue: publish a branch the seed wrote through the page,
// watch it land, read its validations; a structural request waits for
// review, which the read-only viewer is refused and a reviewer gives.
describe("the merge queue", () => {
  let page;
  before(async () => { page = await session(adminToken); });
  after(async () => { assert.deepEqual(page.errors, [], "the page raised script errors"); await page.context().close(); });

  // row is the requests table's row of a request, found by its source.
  const row = (p, source) => p.locator("#queue-requests tbody tr").filter({ hasText: source });

  let landedId;
  test("submits a branch through the page and watches it land", async () => {
    await page.getByRole("link", { name: "Merge queue" }).click();
    await page.getByRole("heading", { name: "Merge queue", level: 1 }).waitFor();
    await page.getByLabel("Source", { exact: true }).fill("ingest/queued");
    await page.getByLabel("Target branch", { exact: true }).last().fill("main");
    // Tables left empty: every change of the branch. (A request naming
    // its tables is retried forever by the queue's worker today: "merge
    // mode for sales.orders given twice", merge/mergequeue/worker.go.)
    await page.getByLabel(/^Required checks/).fill("row-count");
    await page.getByRole("button", { name: "Submit to the queue" }).click();
    await page.getByRole("status").getByText(/Queued as/).waitFor();
    // The page polls the queue itself: wait for the row to say merged.
    await row(page, "ingest/queued").locator(".badge", { hasText: "merged" }).waitFor();
    const r = row(page, "ingest/queued");
    assert.match(await r.innerText(), /ingest\s+cherry-pick/, "its class and classification");
    assert.match(await r.innerText(), /\d s/, "its wait and merge time");
    await shot(page, "11-queue");
    await r.getByRole("link").first().click();
    await page.locator("#request-state").getByText("merged").waitFor();
    const checks = page.locator("#validations article").first();
    await checks.getByText("passed", { exact: true }).waitFor();
    for (const name of ["lineage", "schema", "row-count", "nulls"]) {
      await checks.getByRole("rowheader", { name, exact: true }).waitFor();
    }
    landedId = decodeURIComponent(new URL(page.url()).hash.split("/")[2]);
    const req = await api(`/api/floe/v1/merge-requests/${landedId}`);
    assert.equal(req.state, "merged");
    const candidate = req.validations.at(-1).candidate;
    assert.equal(await checks.getAttribute("data-candidate"), candidate, "the results are keyed by the candidate commit");
    assert.ok(req.requiredChecks.includes("row-count"));
    assert.deepEqual((await page.locator("#audit tbody tr").allInnerTexts()).length, req.audit.length, "the whole audit trail");
    await shot(page, "12-queue-request");
    // The landed commit opens main's history at that commit.
    await page.locator("#landed-commit").getByRole("link").first().click();
    await page.getByRole("heading", { name: new RegExp("History of @" + req.landedCommit) }).waitFor();
    const main = await api("/api/v2/trees/main");
    assert.equal(main.reference.hash, req.landedCommit, "main moved to the landed commit");
  });

  let reviewId;
  test("sends a structural change to review", async () => {
    const res = await fetch(base + "/api/floe/v1/merge-requests", {
      method: "POST", headers: { Authorization: "Bearer " + adminToken, "Content-Type": "application/json" },
      body: JSON.stringify({ source: "users/admin/regions-code", target: "main", message: "regions get a code" }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    reviewId = (await res.json()).id;
    await page.goto(`${base}/ui/#/queue?state=review`);
    await page.locator("#review-queue li").filter({ hasText: "users/admin/regions-code" }).waitFor();
    await row(page, "users/admin/regions-code").locator(".badge", { hasText: "review" }).waitFor();
  });

  test("is refused an approve as the read-only viewer", async () => {
    const viewer = await session(viewerToken);
    await viewer.goto(`${base}/ui/#/queue`);
    const item = viewer.locator("#review-queue li").filter({ hasText: "users/admin/regions-code" });
    await item.getByRole("button", { name: /^Approve/ }).click();
    const dialog = viewer.getByRole("dialog");
    await dialog.getByLabel("Reason").fill("looks fine to me");
    await dialog.getByRole("button", { name: "Confirm approval" }).click();
    await dialog.getByRole("alert").getByText("Not permitted.").waitFor();
    await dialog.getByText(/reviewing merge requests requires group admins or reviewers/).waitFor();
    assert.equal(await dialog.getByRole("button", { name: "Confirm approval" }).count(), 0, "no approval can be confirmed");
    await shot(viewer, "13-queue-refused-approve");
    await dialog.getByRole("button", { name: "Close", exact: true }).click();
    // The buttons are no longer offered; the request still waits.
    await item.getByText(/Not permitted to review/).waitFor();
    assert.equal(await item.getByRole("button", { name: /^Approve/ }).count(), 0);
    assert.equal((await api(`/api/floe/v1/merge-requests/${reviewId}`)).state, "review");
    assert.deepEqual(viewer.errors, []);
    await viewer.context().close();
  });

  test("approves it as a reviewer, and it lands", async () => {
    const reviewer = await session(reviewerToken);
    await reviewer.goto(`${base}/ui/#/queue/${reviewId}`);
    await reviewer.locator("#request-state").getByText("review").waitFor();
    await reviewer.getByRole("button", { name: /^Approve/ }).click();
    const dialog = reviewer.getByRole("dialog");
    await dialog.getByLabel("Reason").fill("the new column is nullable");
    await dialog.getByRole("button", { name: "Confirm approval" }).click();
    await dialog.waitFor({ state: "detached" });
    await reviewer.locator("#request-state").getByText("merged").waitFor();
    const audit = await reviewer.locator("#audit").innerText();
    assert.match(audit, /reviewer\s+.*the new column is nullable/, "the approval is in the audit trail, with its reason");
    await reviewer.locator("#validations").getByText("passed", { exact: true }).first().waitFor();
    const req = await api(`/api/floe/v1/merge-requests/${reviewId}`);
    assert.equal(req.state, "merged");
    assert.equal(req.approved, true);
    const regions = await api("/v1/lake%40main/namespaces/sales/tables/regions");
    assert.ok(regions.metadata.schemas.at(-1).fields.some((f) => f.name === "code"), "the new column reached main");
    assert.deepEqual(reviewer.errors, []);
    await reviewer.context().close();
  });

  test("shows the report of the day as charts", async () => {
    await page.goto(`${base}/ui/#/queue`);
    const report = await api("/api/floe/v1/merge-requests/report");
    const charts = page.locator("#queue-report");
    await charts.locator("svg").first().waitFor();
    const count = await page.locator("#chart-count svg").getAttribute("aria-label");
    for (const c of report.classes) assert.ok(count.includes(`${c.class}: ${c.count}`), `${count} has ${c.class}`);
    const mix = await page.locator("#chart-mix svg").getAttribute("aria-label");
    assert.match(mix, /cherry-pick: 1/);
    assert.ok(await page.locator("#chart-wait rect").count() >= 2);
    await page.locator("#report-table").getByRole("rowheader", { name: "users", exact: true }).waitFor();
    await shot(page, "14-queue-report");
  });
});

// axe-core checks each page against WCAG 2.1 A and AA (labels, names,
// roles, contrast). It is injected into the page, which the console's CSP
// forbids, so this context bypasses the CSP.
describe("accessibility (axe-core, WCAG 2.1 AA)", () => {
  const axeSource = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
  let page;
  before(async () => {
    page = await session(adminToken, LAPTOP, { bypassCSP: true });
  });
  after(async () => { await page.context().close(); });

  for (const [name, path, ready] of [
    ["references", "#/", "#refs"],
    ["contents", "#/ref/main", "#entries"],
    ["history", "#/log/main", "#commits"],
    ["diff", "#/diff?from=v1&to=main", "#diffs"],
    ["table", "#/table/main/sales/orders", "#snapshot-list"],
    ["view", "#/view/main/sales/big_orders", "article.version"],
    ["sign-in", "#/signin", "#token"],
    ["merge queue", "#/queue", "#queue-report svg"],
    ["merge request", "#/queue/", "#validations"],
  ]) {
    test(name, async () => {
      // A merge request's page: the last one merged.
      const at = path === "#/queue/" ? path + (await api("/api/floe/v1/merge-requests?state=merged")).requests.at(-1).id : path;
      await page.goto(`${base}/ui/${at}`);
      await page.locator(ready).first().waitFor();
      await page.waitForFunction(() => !document.querySelector("[data-loading]"));
      await page.addScriptTag({ path: axeSource });
      const result = await page.evaluate(() => window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }));
      const found = result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
      assert.deepEqual(found, [], `WCAG violations on ${name}`);
    });
  }
});

describe("OAuth sign-in", () => {
  test("gets a token with client credentials, and says why a wrong secret fails", async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(e));
    await page.goto(`${base}/ui/#/`);
    // Without a token every API answers 401: the page asks to sign in.
    await page.getByRole("alert").getByText("Sign-in needed.").waitFor();
    await page.getByRole("alert").getByRole("link", { name: "Sign in" }).click();
    await page.getByLabel("Client id").fill(process.env.FLOE_OAUTH_CLIENT);
    await page.getByLabel("Client secret").fill("wrong");
    await page.getByRole("button", { name: "Get a token" }).click();
    await page.getByRole("alert").getByText(/client authentication failed/).waitFor();
    await page.getByLabel("Client secret").fill(process.env.FLOE_OAUTH_SECRET);
    await page.getByRole("button", { name: "Get a token" }).click();
    await page.locator("#refs").getByRole("rowheader", { name: "main", exact: true }).waitFor();
    assert.match(await page.evaluate(() => sessionStorage.getItem("floe.token")), /^ey/, "a JWT issued by floe, in session storage");
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe("at phone width", () => {
  let page;
  before(async () => { page = await session(adminToken, PHONE); });
  after(async () => { assert.deepEqual(page.errors, []); await page.context().close(); });

  for (const [name, path, ready] of [
    ["references", "#/", "#refs"],
    ["table", "#/table/main/sales/orders", "#snapshot-list"],
    ["history", "#/log/main", "#commits"],
    ["queue", "#/queue", "#queue-requests"],
  ]) {
    test(`${name} fits the screen`, async () => {
      await page.goto(`${base}/ui/${path}`);
      await page.locator(ready).waitFor();
      await shot(page, `10-phone-${name}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen (wide tables must scroll in their own box)`);
    });
  }
});
