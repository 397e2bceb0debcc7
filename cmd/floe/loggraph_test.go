package main

import (
	"strings"
	"testing"
)

func TestLayoutGraph(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits []graphCommit
		want    string
	}{
		{
			name:    "linear",
			commits: []graphCommit{{"c", []string{"b"}}, {"b", []string{"a"}}, {"a", nil}},
			want:    "* c\n* b\n* a",
		},
		{
			name: "merge",
			commits: []graphCommit{
				{"m", []string{"main2", "feat2"}},
				{"feat2", []string{"feat1"}},
				{"feat1", []string{"base"}},
				{"main2", []string{"base"}},
				{"base", []string{"root"}},
				{"root", nil},
			},
			want: "* m\n|\\\n| * feat2\n| * feat1\n* | main2\n|/\n* base\n* root",
		},
		{
			name: "merge beside another lane",
			commits: []graphCommit{
				{"x", []string{"m"}},
				{"m", []string{"a", "f"}},
				{"f", []string{"a"}},
				{"a", []string{"b"}},
				{"b", nil},
			},
			want: "* x\n* m\n|\\\n| * f\n|/\n* a\n* b",
		},
		{
			name: "lane right of a merge shifts",
			commits: []graphCommit{
				{"t1", []string{"m"}},
				{"t2", []string{"z"}},
				{"m", []string{"a", "f"}},
				{"f", []string{"a"}},
				{"a", nil},
				{"z", nil},
			},
			want: "* t1\n| * t2\n* | m\n|\\ \\\n| * | f\n|/ /\n* | a\n /\n* z",
		},
		{
			name: "branch merged twice",
			commits: []graphCommit{
				{"m2", []string{"m1", "f2"}},
				{"f2", []string{"f1"}},
				{"m1", []string{"b", "f1"}},
				{"f1", []string{"b"}},
				{"b", nil},
			},
			want: "* m2\n|\\\n| * f2\n* | m1\n|\\ \\\n| |/\n| * f1\n|/\n* b",
		},
		{
			name:    "truncated history keeps lanes open",
			commits: []graphCommit{{"m", []string{"a", "f"}}, {"f", []string{"a"}}},
			want:    "* m\n|\\\n| * f",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for _, l := range layoutGraph(tc.commits) {
				if l.Commit >= 0 {
					b.WriteString(l.Graph + " " + tc.commits[l.Commit].Hash + "\n")
				} else {
					b.WriteString(l.Graph + "\n")
				}
			}
			if got := strings.TrimRight(b.String(), "\n"); got != tc.want {
				t.Errorf("graph:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
