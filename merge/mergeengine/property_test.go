package mergeengine_test

// TestMergeProperty runs random sequences of appends, deletes, overwrites
// (whole-day deletes and overwrites half the time with a floe.operation
// record) and compactions on two catalog branches (main and dev) of real
// partitioned tables, merges dev into main through the Nessie API after
// each round (and, after a refusal, sometimes again with FORCE for the
// refused tables), and compares what floe did with a model of the
// snapshots and files each side holds (main's side since the merge base
// is everything it did since dev last took main's changes, walking past
// the copies of dev's snapshots earlier merges wrote):
//
//   - a merge that succeeds leaves on main exactly the rows of the base
//     with both sides' row changes applied (a full iceberg-go scan), and
//     dev unchanged; merging again is a no-op;
//   - a merge that is refused writes nothing (main's head, its rows and
//     the warehouse's metadata files and manifest lists are unchanged),
//     and names exactly the tables the model refuses, each with the
//     class and reason the model predicts (file-conflict, partition-overlap
//     under refuse or with duplicate identifier keys under check, or a
//     recorded snapshot whose replay would lose the target's rows); a
//     source snapshot without a record that removes files, with no file
//     conflict, is replayed by its own file changes.
//
// The model is the merge rules of merge/mergeengine/README.md and
// merge/classify/README.md restated over in-memory files, not the code.
//
// Every sequence logs its seed and operations (shown on failure or with
// -v). Environment: FLOE_MERGEPROP_SEED (the first sequence's seed;
// default from the clock), FLOE_MERGEPROP_SEQUENCES (how many; default
// 12), FLOE_MERGEPROP_ROUNDS (rounds of operations and a merge per
// sequence; default 3).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

func TestMergeProperty(t *testing.T) {
	propertySequences(t, "FLOE_MERGEPROP", 12, 3, func(t *testing.T, rng *rand.Rand) (*[]string, func(*testing.T, int)) {
		p := &propRun{d: newScenario(t), rng: rng}
		return &p.log, p.run
	})
}

// propertySequences runs sequences of a property test, each a subtest
// with its own seed, from the environment (PREFIX_SEED, the first
// sequence's, by default from the clock; PREFIX_SEQUENCES; PREFIX_ROUNDS)
// or the defaults. start makes one sequence: the log its run appends its
// operations to, and the run. The log is written always: go test shows it
// on failure (and with -v), with the line that reruns the sequence alone.
func propertySequences(t *testing.T, prefix string, sequences, rounds int, start func(t *testing.T, rng *rand.Rand) (log *[]string, run func(t *testing.T, rounds int))) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(prefix + "_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s_SEED=%q: %v", prefix, s, err)
		}
		seed = v
	}
	sequences = envInt(t, prefix+"_SEQUENCES", sequences)
	rounds = envInt(t, prefix+"_ROUNDS", rounds)
	for i := range sequences {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			log, run := start(t, rand.New(rand.NewPCG(s, s)))
			t.Cleanup(func() {
				t.Logf("rerun with %s_SEED=%d %s_SEQUENCES=1 %s_ROUNDS=%d; operations:\n%s",
					prefix, s, prefix, prefix, rounds, strings.Join(*log, "\n"))
			})
			run(t, rounds)
		})
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// propDays are the days (partitions) operations choose from: few, so
// both sides often touch the same one.
var propDays = []string{"2026-08-20", "2026-08-21", "2026-08-22"}

// modelFile is a data file: its partition and the ids of its rows.
type modelFile struct {
	day string
	ids []int64
}

// modelSnap is a snapshot: its operation ("append", "delete",
// "overwrite", or "replace" for a compaction) and the files it added and
// removed. A branch that takes a table whole (a fast-forward, FORCE)
// holds the same modelSnaps. A cherry-picked copy, or a replay, on main is
// a new modelSnap whose copyOf is the source's: the same change (floe
// keeps the source's snapshot id and names it in
// floe.merge.source-snapshot-id), which classify's walk to the merge base
// goes past. recorded says the snapshot records its operation
// (floe.operation.*: overwrite-partitions or delete-partitions of day,
// inputs pinned), so a merge may replay it.
type modelSnap struct {
	op             string
	added, removed []*modelFile
	copyOf         *modelSnap
	recorded       bool
	day            string
}

// change is the change s made: s itself, or the snapshot it copies.
func (s *modelSnap) change() *modelSnap {
	if s.copyOf != nil {
		return s.copyOf
	}
	return s
}

// touches reports whether s's own file changes touched day.
func (s *modelSnap) touches(day string) bool {
	return slices.ContainsFunc(slices.Concat(s.added, s.removed), func(f *modelFile) bool { return f.day == day })
}

// modelTable is one table on one branch (or at the merge base). version
// changes with every change of the catalog's value of the table.
type modelTable struct {
	name    string
	overlap string // floe.merge.partition-overlap, "" for the default
	// keyed: the table declares id its identifier field. Its rows may
	// repeat an id (appended on both sides), so rows are never deleted by
	// id there.
	keyed   bool
	chain   []*modelSnap
	version int
}

func (m *modelTable) clone() *modelTable {
	c := *m
	c.chain = slices.Clone(m.chain)
	return &c
}

// live returns the table's data files, in the order they were added.
func (m *modelTable) live() []*modelFile {
	return liveAfter(nil, m.chain...)
}

// liveAfter applies snaps to the files in.
func liveAfter(in []*modelFile, snaps ...*modelSnap) []*modelFile {
	out := slices.Clone(in)
	for _, s := range snaps {
		for _, f := range s.removed {
			out = slices.DeleteFunc(out, func(g *modelFile) bool { return g == f })
		}
		out = append(out, s.added...)
	}
	return out
}

// rows renders the table's rows as the scenario's rows command does.
func (m *modelTable) rows() string {
	byDay := map[string][]int64{}
	for _, f := range m.live() {
		byDay[f.day] = append(byDay[f.day], f.ids...)
	}
	var b strings.Builder
	for _, day := range propDays {
		ids := byDay[day]
		if len(ids) == 0 {
			continue
		}
		slices.Sort(ids)
		fmt.Fprintf(&b, "%s:", day)
		for _, id := range ids {
			fmt.Fprintf(&b, " %d", id)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "(no rows)\n"
	}
	return b.String()
}

// since returns what the side m did since the merge base, oldest first,
// as classify walks it: back from m's head to a snapshot of the base's own
// history, leaving out on the way every snapshot that is the same change
// as one of the base's (a copy of it). So main's own changes before a
// copy of dev's snapshots are main's change, not hidden behind the copy.
func (m *modelTable) since(t *testing.T, base *modelTable) []*modelSnap {
	t.Helper()
	physical, changes := map[*modelSnap]bool{}, map[*modelSnap]bool{}
	for _, s := range base.chain {
		physical[s] = true
		changes[s.change()] = true
	}
	var out []*modelSnap
	met := map[*modelSnap]bool{}
	i := len(m.chain) - 1
	for ; i >= 0 && !physical[m.chain[i]]; i-- {
		if s := m.chain[i]; changes[s.change()] {
			met[s.change()] = true
		} else {
			out = append(out, s)
		}
	}
	for j := len(base.chain) - 1; j >= 0 && (i < 0 || base.chain[j] != m.chain[i]); j-- {
		if !met[base.chain[j].change()] {
			t.Fatalf("model: %s does not hold the merge base's changes", m.name)
		}
	}
	slices.Reverse(out)
	return out
}

// sideChanges are what classify reads of a side since the base.
type sideChanges struct {
	added, removed map[*modelFile]bool // net: a file added and removed on the side is neither
	parts          map[string]bool     // partitions of the net added and removed files
	// rowDeletes: days where a delete or overwrite removed a file the
	// side had not added itself; rowsAdded: days where a snapshot but a
	// rewrite (replace) added a file, counted per snapshot.
	rowDeletes, rowsAdded map[string]bool
}

func changesOf(snaps []*modelSnap) sideChanges {
	c := sideChanges{added: map[*modelFile]bool{}, removed: map[*modelFile]bool{}, parts: map[string]bool{},
		rowDeletes: map[string]bool{}, rowsAdded: map[string]bool{}}
	for _, s := range snaps {
		for _, f := range s.added {
			c.added[f] = true
			if s.op != "replace" {
				c.rowsAdded[f.day] = true
			}
		}
		for _, f := range s.removed {
			if c.added[f] {
				delete(c.added, f)
				continue
			}
			c.removed[f] = true
			if s.op == "delete" || s.op == "overwrite" {
				c.rowDeletes[f.day] = true
			}
		}
	}
	for f := range c.added {
		c.parts[f.day] = true
	}
	for f := range c.removed {
		c.parts[f.day] = true
	}
	return c
}

// predict says what merging src into tgt (both changed since base) does:
// the refusal (its class first, then words it must hold), or the
// snapshots written on tgt's head. It restates classify's classes and the
// engine's steps in the engine's order (merge/mergeengine/README.md,
// OPERATIONS.md): the overlap rule refuse; the replay plan (a file
// conflict needs every snapshot but an append recorded, and a recorded
// one is refused when the target changed rows of its day, or rewrote files
// the source kept); the rule again for days both touched outside the
// replayed ones; the cherry-pick, oldest first (a replay needs every live
// file of its day on the target to be its input or a rewrite of it; an
// unrecorded delete or overwrite removes exactly the files it removed,
// live on the target since nothing conflicts); the duplicate-key
// check. The tables keep Iceberg's default serializable isolation.
func predict(t *testing.T, base, src, tgt *modelTable) (why []string, picked []*modelSnap, class string) {
	srcSnaps, tgtSnaps := src.since(t, base), tgt.since(t, base)
	s, g := changesOf(srcSnaps), changesOf(tgtSnaps)
	var both bool
	for f := range s.removed {
		both = both || g.removed[f]
	}
	var reasons []string
	if both {
		reasons = append(reasons, "removed or rewritten on both sides")
	}
	for _, day := range propDays {
		if s.rowDeletes[day] && g.rowsAdded[day] {
			reasons = append(reasons, "the rows the target appended in", "day="+day+" (write.")
		}
	}
	common := map[string]bool{}
	for p := range s.parts {
		if g.parts[p] {
			common[p] = true
		}
	}
	conflict := len(reasons) > 0
	class = "disjoint: "
	switch {
	case conflict:
		class = "file-conflict: "
	case len(common) > 0:
		class = "partition-overlap: "
	}
	// refuse words the refusal: the class, then what it says.
	// classify's reasons are checked where the engine repeats them for a
	// file conflict: its replay plan's refusal and the duplicate-key
	// check.
	refuse := func(words ...string) []string { return append([]string{class}, words...) }
	if class == "partition-overlap: " && tgt.overlap == "refuse" {
		return refuse("and the table's rule (floe.merge.partition-overlap) is refuse"), nil, class
	}

	replaced := map[string]bool{}
	rewritten := map[*modelSnap]map[*modelFile]bool{}
	planRefusal := func(why ...string) []string {
		if conflict {
			return refuse(slices.Concat(reasons, []string{"; files: ", "(not replayed: "}, why)...)
		}
		return refuse(why...)
	}
	for _, p := range srcSnaps {
		if p.op == "append" {
			continue
		}
		if !p.recorded {
			if !conflict {
				continue // replayed by its own file changes
			}
			return planRefusal("snapshot", "records no operation to replay"), nil, class
		}
		replaced[p.day] = true
		for _, ts := range tgtSnaps {
			if ts.op != "replace" && ts.touches(p.day) {
				return planRefusal("cannot be replayed: the target changed rows of those partitions since the merge base"), nil, class
			}
		}
		for f := range g.removed {
			if f.day == p.day && !s.removed[f] {
				return planRefusal("cannot be replayed: the target rewrote files the source kept"), nil, class
			}
		}
		rw := map[*modelFile]bool{}
		for f := range g.added {
			if f.day == p.day {
				rw[f] = true
			}
		}
		rewritten[p] = rw
	}
	overlap := class == "partition-overlap: "
	if conflict {
		for p := range replaced {
			delete(common, p)
		}
		if len(common) > 0 {
			overlap = true
			if tgt.overlap == "refuse" {
				return refuse("both sides touched", "and the table's rule (floe.merge.partition-overlap) is refuse"), nil, class
			}
		}
	}

	live := tgt.live()
	for _, p := range srcSnaps {
		c := &modelSnap{op: p.op, copyOf: p, added: p.added, recorded: p.recorded, day: p.day}
		switch rw := rewritten[p]; {
		case rw != nil:
			for _, f := range slices.Concat(p.added, p.removed) {
				if f.day != p.day {
					t.Fatalf("model: snapshot of %s records day %s, changes %s", src.name, p.day, f.day)
				}
			}
			for _, f := range live {
				if f.day != p.day {
					continue
				}
				if !slices.Contains(p.removed, f) && !rw[f] {
					return refuse("operation cannot be replayed on the target", "were not in the operation's input"), nil, class
				}
				c.removed = append(c.removed, f)
			}
		case p.op != "append":
			// No record and no file conflict: its own file changes are
			// the merge, every file it removed live on the target.
			for _, f := range p.removed {
				if !slices.Contains(live, f) {
					t.Fatalf("model: snapshot of %s removes a file not live on the target without a file conflict", src.name)
				}
			}
			c.removed = p.removed
		}
		live = liveAfter(live, c)
		picked = append(picked, c)
	}

	if overlap && tgt.keyed && tgt.overlap == "" {
		// The default rule, check: the merged table must not hold an id
		// twice in the partitions both sides touched.
		seen := map[int64]int{}
		for _, f := range live {
			if common[f.day] {
				for _, id := range f.ids {
					seen[id]++
				}
			}
		}
		var dups []int64
		for id, n := range seen {
			if n > 1 {
				dups = append(dups, id)
			}
		}
		if len(dups) > 0 {
			out := refuse("would hold duplicate identifier keys")
			if conflict {
				out = append(out, reasons...)
			}
			if len(dups) <= 10 {
				for _, id := range dups {
					out = append(out, fmt.Sprintf("id=%d", id))
				}
			}
			return out, nil, class
		}
	}
	return nil, picked, class
}

// propRun is one sequence: the scenario driver, the model, the log.
type propRun struct {
	d      *scenario
	rng    *rand.Rand
	log    []string
	tables []string
	// branches holds each branch's tables; base the tables at the merge
	// base of dev and main.
	branches map[string]map[string]*modelTable
	base     map[string]*modelTable
	version  int
}

// cmd is a scenario command: args are "key=value".
func cmd(name string, args ...string) *datadriven.TestData {
	td := &datadriven.TestData{Cmd: name, Pos: name + " " + strings.Join(args, " ")}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		ca := datadriven.CmdArg{Key: k}
		if ok {
			ca.Vals = []string{v}
		}
		td.CmdArgs = append(td.CmdArgs, ca)
	}
	return td
}

func (p *propRun) do(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	p.log = append(p.log, td.Pos)
	return p.d.run(t, td)
}

func (p *propRun) bump(m *modelTable) {
	p.version++
	m.version = p.version
}

func (p *propRun) run(t *testing.T, rounds int) {
	main := map[string]*modelTable{}
	p.tables = []string{"ns.a"}
	// Usually a table that refuses overlapping partitions, and usually
	// one with an identifier field (the default rule, check, then looks
	// for duplicate keys), so those outcomes show up too.
	if p.rng.IntN(4) != 0 {
		p.tables = append(p.tables, "ns.b")
	}
	if p.rng.IntN(4) != 0 {
		p.tables = append(p.tables, "ns.k")
	}
	for _, name := range p.tables {
		m := &modelTable{name: name}
		args := []string{"table=" + name}
		switch name {
		case "ns.b":
			m.overlap = "refuse"
			args = append(args, "properties=floe.merge.partition-overlap:refuse")
		case "ns.k":
			m.keyed = true
		}
		p.do(t, cmd("table", args...))
		if m.keyed {
			p.do(t, cmd("alter", "table="+name, "identifier=id"))
		}
		p.bump(m)
		main[name] = m
		for range 1 + p.rng.IntN(2) {
			p.appendRows(t, "main", m)
		}
	}
	p.do(t, cmd("branch", "dev"))
	p.branches = map[string]map[string]*modelTable{"main": main, "dev": cloneTables(main)}
	p.base = cloneTables(main)

	for round := range rounds {
		p.log = append(p.log, fmt.Sprintf("# round %d", round+1))
		var sides []string
		for range p.rng.IntN(4) {
			sides = append(sides, "dev")
		}
		for range p.rng.IntN(3) {
			sides = append(sides, "main")
		}
		p.rng.Shuffle(len(sides), func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
		for _, b := range sides {
			p.randomOp(t, b)
		}
		if refused := p.mergeAndCheck(t, nil); len(refused) > 0 && p.rng.IntN(2) == 0 {
			// Take dev's version of the refused tables (FORCE), which
			// also lets the next rounds start from one history again.
			p.mergeAndCheck(t, refused)
		}
	}
}

func cloneTables(in map[string]*modelTable) map[string]*modelTable {
	out := map[string]*modelTable{}
	for k, v := range in {
		out[k] = v.clone()
	}
	return out
}

// randomOp applies one random change to a random table on branch b, in
// floe and in the model.
func (p *propRun) randomOp(t *testing.T, b string) {
	m := p.branches[b][p.tables[p.rng.IntN(len(p.tables))]]
	live := m.live()
	day := propDays[p.rng.IntN(len(propDays))]
	var inDay []*modelFile
	for _, f := range live {
		if f.day == day {
			inDay = append(inDay, f)
		}
	}
	switch r := p.rng.IntN(20); {
	case r < 4 && len(live) > 0 && !m.keyed: // delete one row: its file is rewritten
		f := live[p.rng.IntN(len(live))]
		id := f.ids[p.rng.IntN(len(f.ids))]
		p.do(t, cmd("delete", "on="+b, "table="+m.name, "id="+strconv.FormatInt(id, 10)))
		s := &modelSnap{op: "delete", removed: []*modelFile{f}}
		if rest := slices.DeleteFunc(slices.Clone(f.ids), func(v int64) bool { return v == id }); len(rest) > 0 {
			s.added = []*modelFile{{day: f.day, ids: rest}}
		}
		m.chain = append(m.chain, s)
	case r < 7 && len(inDay) > 0: // delete a whole day, half the time recorded
		s := &modelSnap{op: "delete", removed: inDay, recorded: p.rng.IntN(2) == 0, day: day}
		args := []string{"on=" + b, "table=" + m.name, "day=" + day}
		if s.recorded {
			args = append(args, "record=pinned")
		}
		p.do(t, cmd("delete", args...))
		m.chain = append(m.chain, s)
	case r < 10 && len(inDay) > 0: // replace a day's rows, half the time recorded
		n := 1 + p.rng.IntN(3)
		first := p.d.lake.LastID() + 1
		s := &modelSnap{op: "overwrite", removed: inDay, recorded: p.rng.IntN(2) == 0, day: day}
		args := []string{"on=" + b, "table=" + m.name, "day=" + day, "rows=" + strconv.Itoa(n)}
		if s.recorded {
			args = append(args, "record=pinned")
		}
		p.do(t, cmd("overwrite", args...))
		s.added = []*modelFile{{day: day, ids: idRange(first, p.d.lake.LastID())}}
		m.chain = append(m.chain, s)
	case r < 12 && len(inDay) > 0: // compact a day: same rows, one new file (a rewrite: replace)
		p.do(t, cmd("compact", "on="+b, "table="+m.name, "day="+day))
		var ids []int64
		for _, f := range inDay {
			ids = append(ids, f.ids...)
		}
		m.chain = append(m.chain, &modelSnap{op: "replace", removed: inDay, added: []*modelFile{{day: day, ids: ids}}})
	default:
		p.appendRowsOn(t, b, m, day)
		return
	}
	p.bump(m)
}

func (p *propRun) appendRows(t *testing.T, b string, m *modelTable) {
	p.appendRowsOn(t, b, m, propDays[p.rng.IntN(len(propDays))])
}

// appendRowsOn appends 1 to 3 new rows to day; on a keyed table the first
// sometimes repeats an id of the other branch's rows of that day.
func (p *propRun) appendRowsOn(t *testing.T, b string, m *modelTable, day string) {
	n := 1 + p.rng.IntN(3)
	first := p.d.lake.LastID() + 1
	args := []string{"on=" + b, "table=" + m.name, "day=" + day, "rows=" + strconv.Itoa(n)}
	var reuse []int64
	if other := map[string]string{"main": "dev", "dev": "main"}[b]; m.keyed && p.branches != nil && p.rng.IntN(3) != 0 {
		for _, f := range p.branches[other][m.name].live() {
			if f.day == day {
				reuse = append(reuse, f.ids...)
			}
		}
	}
	ids := idRange(first, first+int64(n)-1)
	if len(reuse) > 0 {
		ids[0] = reuse[p.rng.IntN(len(reuse))]
		args = append(args, "ids="+strconv.FormatInt(ids[0], 10))
	}
	p.do(t, cmd("append", args...))
	if p.d.lake.LastID() != first+int64(n)-1 {
		t.Fatalf("model: ids %d..%d, the driver is at %d", first, first+int64(n)-1, p.d.lake.LastID())
	}
	m.chain = append(m.chain, &modelSnap{op: "append", added: []*modelFile{{day: day, ids: ids}}})
	p.bump(m)
}

func idRange(lo, hi int64) []int64 {
	var out []int64
	for id := lo; id <= hi; id++ {
		out = append(out, id)
	}
	return out
}

// mergeAndCheck merges dev into main, with merge behavior FORCE for the
// tables force names, and checks the outcome against the model's
// prediction. It returns the tables the merge refused.
func (p *propRun) mergeAndCheck(t *testing.T, force map[string]bool) map[string]bool {
	st := p.d.srv.Store
	main, dev := p.branches["main"], p.branches["dev"]

	// The prediction: each table changed on both sides is cherry-picked
	// or refused; one changed only on dev is taken from dev.
	refused := map[string][]string{}
	next := map[string]*modelTable{}
	var notes []string
	for _, name := range p.tables {
		base, src, tgt := p.base[name], dev[name], main[name]
		switch {
		case force[name]:
			next[name] = src.clone()
		case src.version != base.version && tgt.version != base.version:
			why, picked, class := predict(t, base, src, tgt)
			if why != nil {
				refused[name] = why
				continue
			}
			m := tgt.clone()
			m.chain = append(m.chain, picked...)
			p.bump(m)
			next[name] = m
			replays := 0
			for _, c := range picked {
				if c.op != "append" {
					replays++
				}
			}
			notes = append(notes, fmt.Sprintf("  (model: %s %spicks %d snapshot(s), %d replayed)", name, class, len(picked), replays))
		case src.version != base.version:
			next[name] = src.clone()
		default:
			next[name] = tgt
		}
	}

	before, err := st.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	files := p.d.files(t, &datadriven.TestData{})
	args := []string{"source=dev", "target=main"}
	if len(force) > 0 {
		var keys []string
		for _, name := range p.tables {
			if force[name] {
				keys = append(keys, name)
			}
		}
		args = append(args, "force="+strings.Join(keys, ","))
	}
	got := p.do(t, cmd("merge", args...))
	p.log = append(p.log, "  -> "+strings.TrimSpace(got))
	if len(refused) == 0 {
		p.log = append(p.log, notes...)
	}

	if len(refused) > 0 {
		if !strings.HasPrefix(got, "409 merge refused: ") {
			t.Fatalf("merge: got %q, want a refusal of %v", got, refused)
		}
		for _, name := range p.tables {
			why, ok := refused[name]
			reason := ""
			if i := strings.Index(got, name+": "); i >= 0 {
				reason, _, _ = strings.Cut(got[i:], "; ns.")
			}
			switch {
			case ok && reason == "":
				t.Errorf("refusal does not name %s (want %q): %s", name, why, got)
			case ok && !strings.HasPrefix(reason, name+": "+why[0]):
				t.Errorf("refusal of %s is not %q: %s", name, why[0], got)
			case !ok && reason != "":
				t.Errorf("refusal names %s, which the model merges: %s", name, got)
			}
			for _, w := range why[min(1, len(why)):] {
				if !strings.Contains(reason, w) {
					t.Errorf("refusal of %s does not say %q: %s", name, w, got)
				}
			}
		}
		after, err := st.GetRef("main")
		if err != nil {
			t.Fatal(err)
		}
		if after.Head != before.Head {
			t.Errorf("refused merge moved main from %s to %s", before.Head, after.Head)
		}
		if now := p.d.files(t, &datadriven.TestData{}); now != files {
			t.Errorf("refused merge left files behind: before %s after %s", strings.TrimSpace(files), strings.TrimSpace(now))
		}
		p.checkRows(t)
		out := map[string]bool{}
		for name := range refused {
			out[name] = true
		}
		return out
	}

	if !strings.HasPrefix(got, "200 ") {
		t.Fatalf("merge: got %q, want success", got)
	}
	p.branches["main"] = next
	p.base = cloneTables(dev)
	p.checkRows(t)

	// Merged again with nothing new: a no-op.
	mid, err := st.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if again := p.do(t, cmd("merge", "source=dev", "target=main")); again != "200 nothing to merge\n" {
		t.Errorf("merge again: got %q, want a no-op", again)
	}
	if after, _ := st.GetRef("main"); after.Head != mid.Head {
		t.Errorf("a second merge moved main from %s to %s", mid.Head, after.Head)
	}
	return nil
}

// checkRows compares a full scan of every table on both branches with
// the model.
func (p *propRun) checkRows(t *testing.T) {
	t.Helper()
	for _, b := range []string{"main", "dev"} {
		for _, name := range p.tables {
			got := p.d.scanRows(t, cmd("rows", "on="+b, "table="+name))
			if want := p.branches[b][name].rows(); got != want {
				t.Errorf("rows of %s on %s:\ngot\n%swant\n%s", name, b, got, want)
			}
		}
	}
}
