// The commit graph's lane layout (web/src/graph.ts), bundled by run.sh to
// FLOE_GRAPH_MODULE: each commit lands in the column `floe log --graph`
// puts it in (the cases of cmd/floe/loggraph_test.go), and every lane
// leaving a row's bottom enters the next row's top.

import assert from "node:assert/strict";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

const { layoutLanes } = await import(pathToFileURL(process.env.FLOE_GRAPH_MODULE).href);

const c = (hash, ...parents) => ({ hash, parents });

// Columns are where cmd/floe/loggraph_test.go's expected drawings put
// each commit's '*' (character 2i is column i).
const cases = [
  { name: "linear", commits: [c("c", "b"), c("b", "a"), c("a")], cols: [0, 0, 0] },
  {
    name: "merge",
    commits: [c("m", "main2", "feat2"), c("feat2", "feat1"), c("feat1", "base"), c("main2", "base"), c("base", "root"), c("root")],
    cols: [0, 1, 1, 0, 0, 0],
  },
  { name: "merge beside another lane", commits: [c("x", "m"), c("m", "a", "f"), c("f", "a"), c("a", "b"), c("b")], cols: [0, 0, 1, 0, 0] },
  {
    name: "lane right of a merge shifts",
    commits: [c("t1", "m"), c("t2", "z"), c("m", "a", "f"), c("f", "a"), c("a"), c("z")],
    cols: [0, 1, 0, 1, 0, 0],
  },
  { name: "branch merged twice", commits: [c("m2", "m1", "f2"), c("f2", "f1"), c("m1", "b", "f1"), c("f1", "b"), c("b")], cols: [0, 1, 0, 1, 0] },
  { name: "truncated history keeps lanes open", commits: [c("m", "a", "f"), c("f", "a")], cols: [0, 1] },
];

const bottoms = (row) => row.segments.filter((s) => s.y2 === 2 && !s.stub).map((s) => s.x2).sort();
const tops = (row) => [...new Set(row.segments.filter((s) => s.y1 === 0).map((s) => s.x1))].sort();

for (const tc of cases) {
  test(tc.name, () => {
    const rows = layoutLanes(tc.commits);
    assert.deepEqual(rows.map((r) => r.col), tc.cols);
    for (let i = 0; i + 1 < rows.length; i++) {
      assert.deepEqual([...new Set(bottoms(rows[i]))].sort(), tops(rows[i + 1]), `lanes between rows ${i} and ${i + 1}`);
    }
    assert.ok(rows.every((r) => r.segments.every((s) => Math.max(s.x1, s.x2) < r.width)), "every segment within its row's width");
  });
}

test("a first-parent history draws unseen merged parents as stubs", () => {
  // As the version store's log lists main: merges whose second parents
  // are not in the list.
  const rows = layoutLanes([c("m2", "m1", "f2"), c("m1", "b", "f1"), c("b")]);
  assert.deepEqual(rows.map((r) => r.col), [0, 0, 0]);
  assert.deepEqual(rows.map((r) => r.width), [2, 2, 1], "no lane stays open for a parent never listed");
  assert.ok(rows[0].merge && rows[1].merge && !rows[2].merge);
  assert.equal(rows[0].segments.filter((s) => s.stub).length, 1);
  assert.deepEqual(bottoms(rows[0]), [0]);
});
