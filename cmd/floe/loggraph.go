package main

import "strings"

// graphCommit is one commit of a history drawn as a graph: its hash and
// its parents, first parent first.
type graphCommit struct {
	Hash    string
	Parents []string
}

// graphLine is one output line of a graph: the lane drawing, and the
// index of the commit it shows, or -1 for a line that only connects lanes.
type graphLine struct {
	Graph  string
	Commit int
}

// laneEdge is a lane going from one column to another between two rows.
type laneEdge struct{ from, to int }

// layoutGraph draws commits, given children before parents, as lanes in
// the manner of `git log --graph`: column i of a row is character 2i, a
// commit is '*', a lane '|'. After a merge its second and further parents
// open lanes to its right ('\'); before a commit that several lanes wait
// for, those lanes join its leftmost one ('/'). A lane moves one column per
// line, so a longer move takes several connecting lines.
//
// The invariant is that cols[i] is the commit lane i leads to; a parent
// not among commits keeps its lane open to the end.
func layoutGraph(commits []graphCommit) []graphLine {
	var lines []graphLine
	var cols []string
	for i, c := range commits {
		col := -1
		var dup bool
		for j, h := range cols {
			if h == c.Hash {
				if col < 0 {
					col = j
				} else {
					dup = true
				}
			}
		}
		if col < 0 {
			cols = append(cols, c.Hash)
			col = len(cols) - 1
		}
		if dup {
			// Lanes waiting for c join its leftmost lane, and the lanes
			// right of them close up. Every lane before col is kept, so
			// col keeps its index.
			var edges []laneEdge
			var next []string
			for j, h := range cols {
				if h == c.Hash && j != col {
					edges = append(edges, laneEdge{j, col})
					continue
				}
				edges = append(edges, laneEdge{j, len(next)})
				next = append(next, h)
			}
			lines = append(lines, connect(edges)...)
			cols = next
		}

		row := make([]string, len(cols))
		for j := range cols {
			row[j] = "|"
		}
		row[col] = "*"
		lines = append(lines, graphLine{Graph: strings.Join(row, " "), Commit: i})

		// The commit's lane continues to its first parent; further
		// parents open lanes right of it; a root commit ends its lane.
		var parents []string
		for _, p := range c.Parents {
			if p != "" {
				parents = append(parents, p)
			}
		}
		var edges []laneEdge
		for j := range cols {
			switch {
			case j < col:
				edges = append(edges, laneEdge{j, j})
			case j == col:
				for k := range parents {
					edges = append(edges, laneEdge{j, j + k})
				}
			default:
				edges = append(edges, laneEdge{j, j + len(parents) - 1})
			}
		}
		next := append([]string{}, cols[:col]...)
		next = append(next, parents...)
		next = append(next, cols[col+1:]...)
		lines = append(lines, connect(edges)...)
		cols = next
	}
	return lines
}

// connect draws the lines that move each lane from its column to its new
// one, one column per line: '\' right, '/' left, '|' straight down. It
// draws nothing when no lane moves.
func connect(edges []laneEdge) []graphLine {
	cur := make([]int, len(edges))
	for i, e := range edges {
		cur[i] = e.from
	}
	var lines []graphLine
	for {
		moving := false
		for i, e := range edges {
			if cur[i] != e.to {
				moving = true
				break
			}
		}
		if !moving {
			return lines
		}
		var b []byte
		put := func(pos int, ch byte) {
			for len(b) <= pos {
				b = append(b, ' ')
			}
			if b[pos] == ' ' || ch != '|' {
				b[pos] = ch
			}
		}
		for i, e := range edges {
			switch {
			case cur[i] < e.to:
				put(2*cur[i]+1, '\\')
				cur[i]++
			case cur[i] > e.to:
				put(2*cur[i]-1, '/')
				cur[i]--
			default:
				put(2*cur[i], '|')
			}
		}
		lines = append(lines, graphLine{Graph: strings.TrimRight(string(b), " "), Commit: -1})
	}
}
