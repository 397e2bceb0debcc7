// The commit graph's lanes, laid out as `floe log --graph` lays them
// (cmd/floe/loggraph.go): commits come children first; a commit takes the
// leftmost lane waiting for it, lanes that waited for it too join it, its
// first parent continues its lane and further parents open lanes to its
// right. A parent not among the commits keeps its lane open to the end.
//
// One difference: a history that follows first parents only (as the
// version store's log does) never lists a merge's further parents, and a
// lane open for each would only grow to the right. A further parent not
// among the commits is drawn as a short dashed stub into the merge's dot
// instead (the page links to it); a first parent not among them (the next
// page) keeps its lane.
//
// Each row is drawn on its own (one SVG per row of the list), so the
// layout gives, per row, the segments from the row's top to the commit's
// dot and from the dot or a passing lane to the row's bottom.

export type Segment = { x1: number; y1: 0 | 1 | 2; x2: number; y2: 0 | 1 | 2; lane: number; stub?: boolean };

export type GraphRow = {
  col: number;      // the commit's lane
  width: number;    // lanes drawn in this row
  merge: boolean;   // the commit has more than one parent
  segments: Segment[]; // y: 0 top, 1 the dot, 2 bottom
};

export function layoutLanes(commits: { hash: string; parents: string[] }[]): GraphRow[] {
  let cols: string[] = [];
  const rows: GraphRow[] = [];
  const known = new Set(commits.map((c) => c.hash));
  for (const c of commits) {
    let col = cols.indexOf(c.hash);
    const fresh = col < 0; // no child drawn above: the lane starts at the dot
    if (fresh) {
      cols.push(c.hash);
      col = cols.length - 1;
    }
    const all = c.parents.filter((p) => p !== "");
    const parents = all.filter((p, i) => i === 0 || known.has(p));
    const stubs = all.length - parents.length;
    const segments: Segment[] = [];
    const next: string[] = [];
    const moved: { from: number; to: number }[] = [];
    cols.forEach((h, j) => {
      if (h === c.hash) {
        // Every lane waiting for this commit ends in its dot.
        if (!(fresh && j === col)) segments.push({ x1: j, y1: 0, x2: col, y2: 1, lane: j });
        if (j === col) {
          for (const p of parents) {
            moved.push({ from: -1, to: next.length });
            next.push(p);
          }
        }
        return;
      }
      segments.push({ x1: j, y1: 0, x2: j, y2: 1, lane: j });
      moved.push({ from: j, to: next.length });
      next.push(h);
    });
    for (const m of moved) {
      if (m.from < 0) segments.push({ x1: col, y1: 1, x2: m.to, y2: 2, lane: m.to });
      else segments.push({ x1: m.from, y1: 1, x2: m.to, y2: 2, lane: m.to });
    }
    for (let i = 0; i < stubs; i++) segments.push({ x1: col + 1 + i, y1: 2, x2: col, y2: 1, lane: col + 1 + i, stub: true });
    rows.push({ col, width: Math.max(cols.length, next.length, stubs ? col + 1 + stubs : 0, 1), merge: all.length > 1, segments });
    cols = next;
  }
  return rows;
}
