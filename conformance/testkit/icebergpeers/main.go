package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "icebergpeers: "+err.Error())
		os.Exit(1)
	}
}

// Peer is one server under benchmark.
type Peer struct {
	Name      string
	URL       string // the Iceberg REST `uri`
	Warehouse string // the `warehouse` a client asks /v1/config for
	PID       int    // the server process, for its CPU time; 0: not measured
	StorePID  int    // its object store's process (moto), 0: none
}

// peerFlags collects repeated -peer name=...,url=...,warehouse=...,pid=...,store-pid=...
type peerFlags []Peer

func (p *peerFlags) String() string { return fmt.Sprint(*p) }

func (p *peerFlags) Set(v string) error {
	var peer Peer
	for kv := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want key=value pairs", kv)
		}
		var err error
		switch k {
		case "name":
			peer.Name = val
		case "url":
			peer.URL = val
		case "warehouse":
			peer.Warehouse = val
		case "pid":
			peer.PID, err = strconv.Atoi(val)
		case "store-pid":
			peer.StorePID, err = strconv.Atoi(val)
		default:
			return fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s=%q: %w", k, val, err)
		}
	}
	if peer.Name == "" || peer.URL == "" {
		return errors.New("a peer needs name= and url=")
	}
	*p = append(*p, peer)
	return nil
}

type config struct {
	peers     peerFlags
	step      time.Duration
	runs      int
	warmup    int
	snapshots int
	s3        string
	kinds     string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("icebergpeers", flag.ContinueOnError)
	fs.Var(&cfg.peers, "peer", "a server: name=NAME,url=URI,warehouse=W,pid=PID,store-pid=PID (repeatable; the first is the one the others are compared with)")
	fs.DurationVar(&cfg.step, "step", 10*time.Second, "how long each timed step runs")
	fs.IntVar(&cfg.runs, "runs", 3, "alternated runs; the tables show medians")
	fs.IntVar(&cfg.warmup, "warmup", 200, "untimed ops per workload before the first run, so JVMs have compiled their hot paths")
	fs.IntVar(&cfg.snapshots, "snapshots", 1000, "snapshots of the large table")
	fs.StringVar(&cfg.s3, "s3", "", "S3-compatible endpoint (moto) for s3:// table locations")
	fs.StringVar(&cfg.kinds, "workloads", "", "comma-separated workloads to time, of "+strings.Join(workloadKinds(), ", ")+"; empty: all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(cfg.peers) == 0 {
		return errors.New("no -peer given")
	}
	timed, err := selectSteps(cfg.kinds)
	if err != nil {
		return err
	}

	var systems []*system
	for _, p := range cfg.peers {
		s, err := setUp(ctx, p, cfg, out)
		if err != nil {
			fmt.Fprintf(out, "icebergpeers: %s left out: %v\n", p.Name, err)
			continue
		}
		defer s.close()
		systems = append(systems, s)
	}
	if len(systems) == 0 {
		return errors.New("no server could be set up")
	}

	var res Results
	for r := range cfg.runs {
		// Alternate the order so no system always runs first (on a cold
		// page cache) or last (after the others heated the machine).
		order := append(systems[r%len(systems):], systems[:r%len(systems)]...)
		names := make([]string, len(order))
		for i, s := range order {
			names[i] = s.peer.Name
		}
		fmt.Fprintf(out, "icebergpeers: run %d of %d, order %s\n", r+1, cfg.runs, strings.Join(names, ", "))
		for _, st := range timed {
			for _, s := range order {
				sample, err := s.measure(ctx, st, r, cfg.step)
				if err != nil {
					return fmt.Errorf("run %d, %s, %d clients, %s: %w", r+1, st.name, st.clients, s.peer.Name, err)
				}
				res.Add(sample)
				fmt.Fprintf(out, "icebergpeers:   %s, %d clients, %s: %.0f ops/s, p50 %s ms, p99 %s ms, server CPU %s ms/op (user %s)\n",
					st.name, st.clients, s.peer.Name, sample.PerSecond, ms(sample.P50), ms(sample.P99), ms(sample.ServerCPU), ms(sample.ServerUserCPU))
				if a := sample.Append; a != nil {
					fmt.Fprintf(out, "icebergpeers:     appends: %d first-attempt, %d retries, %d failed, %d other errors; %s\n",
						a.FirstAttempt, a.Retries, a.Failed, a.Errors, a.Loss)
					if a.FirstError != "" {
						fmt.Fprintf(out, "icebergpeers:     first other error: %s\n", a.FirstError)
					}
				}
			}
		}
	}
	fmt.Fprintln(out)
	for _, s := range systems {
		fmt.Fprintf(out, "icebergpeers: %s lists %d snapshots when loading the table of %d snapshots\n", s.peer.Name, s.bigListed, cfg.snapshots)
	}
	fmt.Fprintln(out)
	return res.WriteTables(out, systems[0].peer.Name)
}

// step is one timed workload.
type step struct {
	name    string
	clients int
	kind    string
}

func steps() []step {
	return []step{
		{"property commits, distinct tables", 1, "props"},
		{"property commits, distinct tables", 8, "props"},
		{"property commits, distinct tables", 32, "props"},
		{"appends, one hot table", 8, "append"},
		{"appends, one hot table", 32, "append"},
		{"loadTable", 1, "load"},
		{"loadTable", 8, "load"},
		{"loadTable, 1,000 snapshots", 1, "load-big"},
		{"property commits, 1,000 snapshots", 1, "props-big"},
	}
}

// workloadKinds are the kinds of steps, in their order.
func workloadKinds() []string {
	var kinds []string
	for _, st := range steps() {
		if !slices.Contains(kinds, st.kind) {
			kinds = append(kinds, st.kind)
		}
	}
	return kinds
}

// selectSteps is the steps of the comma-separated kinds (all for "").
func selectSteps(kinds string) ([]step, error) {
	if kinds == "" {
		return steps(), nil
	}
	want := strings.Split(kinds, ",")
	for _, k := range want {
		if !slices.Contains(workloadKinds(), k) {
			return nil, fmt.Errorf("-workloads: no workload %q (there are %s)", k, strings.Join(workloadKinds(), ", "))
		}
	}
	var out []step
	for _, st := range steps() {
		if slices.Contains(want, st.kind) {
			out = append(out, st)
		}
	}
	return out, nil
}

// system is a peer with its client and the tables set up on it.
type system struct {
	peer      Peer
	c         *Client
	st        *Storage
	ns        string
	props     []Table // one per client of the property commits
	small     Table   // loadTable's table: 10 snapshots
	big       Table   // cfg.snapshots snapshots
	bigListed int
}

func (s *system) close() { s.c.Close() }

const maxClients = 32

func setUp(ctx context.Context, p Peer, cfg config, out io.Writer) (*system, error) {
	c, err := NewClient(ctx, p.URL, p.Warehouse, maxClients)
	if err != nil {
		return nil, err
	}
	s := &system{peer: p, c: c, st: NewStorage(cfg.s3, maxClients), ns: fmt.Sprintf("peerbench_%x", randomID()&0xffffff)}
	if err := c.CreateNamespace(ctx, s.ns); err != nil {
		c.Close()
		return nil, err
	}
	create := func(name string) (Table, error) {
		md, err := c.CreateTable(ctx, s.ns, name)
		if err == nil && md.UUID == "" {
			err = fmt.Errorf("creating %s.%s: no table-uuid in the answer", s.ns, name)
		}
		return Table{NS: s.ns, Name: name, UUID: md.UUID}, err
	}
	fail := func(err error) (*system, error) { c.Close(); return nil, err }
	for i := range maxClients {
		t, err := create(fmt.Sprintf("props_%02d", i))
		if err != nil {
			return fail(err)
		}
		s.props = append(s.props, t)
	}
	if s.small, err = create("small"); err != nil {
		return fail(err)
	}
	if err := AddSnapshots(ctx, c, s.st, s.small, 10, 10); err != nil {
		return fail(err)
	}
	if s.big, err = create("big"); err != nil {
		return fail(err)
	}
	t0 := time.Now()
	if err := AddSnapshots(ctx, c, s.st, s.big, cfg.snapshots, 100); err != nil {
		return fail(err)
	}
	md, err := c.LoadTable(ctx, s.ns, "big")
	if err != nil {
		return fail(err)
	}
	s.bigListed = len(md.Snapshots)
	fmt.Fprintf(out, "icebergpeers: %s: namespace %s, %d tables, %d snapshots added in %s; warming up\n",
		p.Name, s.ns, maxClients+2, cfg.snapshots+10, time.Since(t0).Round(time.Millisecond))
	if cfg.warmup > 0 {
		if _, err := PropertyCommits(ctx, c, s.props, 8, 0, max(cfg.warmup/8, 1)); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
		if _, err := Loads(ctx, c, s.small, 8, 0, max(cfg.warmup/8, 1)); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
		hot, err := create("warm_hot")
		if err != nil {
			return fail(err)
		}
		if err := AddSnapshots(ctx, c, s.st, hot, max(cfg.warmup/4, 1), 1); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	return s, nil
}

// measure runs step st once, reading the CPU time of the server (and its
// store) before and after.
func (s *system) measure(ctx context.Context, st step, run int, d time.Duration) (Sample, error) {
	sample := Sample{Step: st.name, Clients: st.clients, System: s.peer.Name, HasStore: s.peer.StorePID != 0}
	var hot Table
	if st.kind == "append" {
		// A new table per step, so each starts from a table without a
		// snapshot, where the first appends assert main does not exist.
		md, err := s.c.CreateTable(ctx, s.ns, fmt.Sprintf("hot_%d_%d", run, st.clients))
		if err != nil {
			return sample, err
		}
		hot = Table{NS: s.ns, Name: fmt.Sprintf("hot_%d_%d", run, st.clients), UUID: md.UUID}
	}
	cpu0, err := s.cpu()
	if err != nil {
		return sample, err
	}
	var stats Stats
	switch st.kind {
	case "props":
		stats, err = PropertyCommits(ctx, s.c, s.props, st.clients, d, 0)
	case "load":
		stats, err = Loads(ctx, s.c, s.small, st.clients, d, 0)
	case "load-big":
		stats, err = Loads(ctx, s.c, s.big, st.clients, d, 0)
	case "props-big":
		stats, err = PropertyCommits(ctx, s.c, []Table{s.big}, st.clients, d, 0)
	case "append":
		var a AppendResult
		a, err = HotAppends(ctx, s.c, s.st, hot, st.clients, d)
		stats, sample.Append = a.Stats, &a
	default:
		err = fmt.Errorf("unknown step kind %q", st.kind)
	}
	if err != nil {
		return sample, err
	}
	cpu1, err := s.cpu()
	if err != nil {
		return sample, err
	}
	sample.PerSecond, sample.P50, sample.P99 = stats.PerSecond(), stats.Percentile(50), stats.Percentile(99)
	if stats.Ops > 0 {
		server := cpu1[0].sub(cpu0[0])
		sample.ServerCPU = server.total() / time.Duration(stats.Ops)
		sample.ServerUserCPU = server.user / time.Duration(stats.Ops)
		sample.StoreCPU = cpu1[1].sub(cpu0[1]).total() / time.Duration(stats.Ops)
	}
	return sample, nil
}

// cpu reads the CPU time of the server and its store (0 when not known).
func (s *system) cpu() ([2]cpuTimes, error) {
	var t [2]cpuTimes
	for i, pid := range []int{s.peer.PID, s.peer.StorePID} {
		if pid == 0 {
			continue
		}
		d, err := CPUTime(pid)
		if err != nil {
			return t, err
		}
		t[i] = d
	}
	return t, nil
}
