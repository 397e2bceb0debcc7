package planeval

import "github.com/open-policy-agent/opa/v1/ir"

// markDataRefs sets dotStmt.inData on the lookups of one function (or the
// plan) that continue a reference into the data document: those whose
// source is the data parameter, or a local that only such lookups write.
// A local written any other way (assigned, a call's result, a parameter)
// is a variable, which topdown does not look up by path.
func markDataRefs(blocks [][]stmt, params []int) {
	var dots []*dotStmt
	other := map[int]bool{} // locals written by something else than a lookup
	for _, p := range params {
		if p != int(ir.Data) {
			other[p] = true
		}
	}
	eachStmt(blocks, func(s stmt) {
		switch s := s.(type) {
		case *dotStmt:
			dots = append(dots, s)
		case *scanStmt:
			other[s.key], other[s.value] = true, true
		default:
			if t, ok := target(s); ok {
				other[t] = true
			}
		}
	})
	// The greatest set of data locals: start from every lookup target not
	// written otherwise, then drop those some lookup writes from a source
	// outside the set, until nothing changes.
	data := map[int]bool{int(ir.Data): true}
	for _, d := range dots {
		if !other[d.target] {
			data[d.target] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, d := range dots {
			if data[d.target] && d.target != int(ir.Data) && (d.src.local < 0 || !data[d.src.local]) {
				delete(data, d.target)
				changed = true
			}
		}
	}
	for _, d := range dots {
		d.inData = d.src.local >= 0 && data[d.src.local]
	}
}

// target is the local a statement writes, if it writes one.
func target(s stmt) (int, bool) {
	switch s := s.(type) {
	case *callStmt:
		return s.result, true
	case *builtinStmt:
		return s.result, true
	case *lenStmt:
		return s.target, true
	case *assignStmt:
		return s.target, true
	case *assignOnceStmt:
		return s.target, true
	case *resetStmt:
		return s.target, true
	case *makeStmt:
		return s.target, true
	case *objectMergeStmt:
		return s.target, true
	}
	return 0, false
}

// eachStmt calls f on every statement of blocks, nested ones included.
func eachStmt(blocks [][]stmt, f func(stmt)) {
	for _, b := range blocks {
		for _, s := range b {
			f(s)
			switch s := s.(type) {
			case *blockStmt:
				eachStmt(s.blocks, f)
			case *scanStmt:
				eachStmt([][]stmt{s.body}, f)
			case *notStmt:
				eachStmt([][]stmt{s.body}, f)
			}
		}
	}
}
