package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

func main() {
	server := flag.String("server", "", "floe's base URL, e.g. http://127.0.0.1:8181")
	token := flag.String("token", "", "bearer token of a principal that may write main and create branches")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := &seeder{base: *server, token: *token, http: &http.Client{Timeout: 30 * time.Second}}
	if err := s.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
	fmt.Println("seed: done")
}

type seeder struct {
	base, token string
	http        *http.Client
}

var ordersSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "order number"},
	iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

var customersSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String, Required: true},
)

func (s *seeder) run(ctx context.Context) error {
	// The default policy writes main only through merges: the first
	// tables are made on a branch and merged.
	if err := s.createRef(ctx, "ingest/staging", "BRANCH", "main"); err != nil {
		return err
	}
	main, err := s.catalog(ctx, "lake@ingest/staging")
	if err != nil {
		return err
	}
	if err := main.CreateNamespace(ctx, catalog.ToIdentifier("sales"), iceberg.Properties{"owner": "console-test"}); err != nil {
		return fmt.Errorf("create namespace sales: %w", err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	orders, err := main.CreateTable(ctx, catalog.ToIdentifier("sales", "orders"), ordersSchema, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"write.format.default": "parquet", "comment": "orders by region"}))
	if err != nil {
		return fmt.Errorf("create sales.orders: %w", err)
	}
	if orders, err = appendOrders(ctx, orders, []order{{1, "eu", 10}, {2, "us", 20}, {3, "eu", 30}}); err != nil {
		return err
	}
	customers, err := main.CreateTable(ctx, catalog.ToIdentifier("sales", "customers"), customersSchema)
	if err != nil {
		return fmt.Errorf("create sales.customers: %w", err)
	}
	if _, err := appendCustomers(ctx, customers, map[int64]string{1: "Ada", 2: "Grace"}); err != nil {
		return err
	}
	v1, err := view.NewVersionFromSQL(1, 0, "SELECT id, amount FROM sales.orders WHERE amount > 15", catalog.ToIdentifier("sales"))
	if err != nil {
		return err
	}
	bigOrders, err := main.CreateView(ctx, catalog.ToIdentifier("sales", "big_orders"), v1, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "amount", Type: iceberg.PrimitiveTypes.Float64}))
	if err != nil {
		return fmt.Errorf("create view sales.big_orders: %w", err)
	}
	v2, err := view.NewVersionFromSQL(2, 0, "SELECT id, amount FROM sales.orders WHERE amount > 25", catalog.ToIdentifier("sales"))
	if err != nil {
		return err
	}
	if _, err := main.UpdateView(ctx, catalog.ToIdentifier("sales", "big_orders"),
		[]view.Requirement{view.AssertViewUUID(bigOrders.Metadata().ViewUUID())},
		[]view.Update{view.NewAddViewVersionUpdate(v2), view.NewSetCurrentVersionUpdate(-1)}); err != nil {
		return fmt.Errorf("replace view sales.big_orders: %w", err)
	}
	if err := s.merge(ctx, "ingest/staging", "main"); err != nil {
		return err
	}
	if err := s.createRef(ctx, "v1", "TAG", "main"); err != nil {
		return err
	}

	// A hotfix branch merged back, so main's history has a merge commit
	// (two lanes) before the test merges anything.
	if err := s.createRef(ctx, "ingest/hotfix", "BRANCH", "main"); err != nil {
		return err
	}
	hotfix, err := s.catalog(ctx, "lake@ingest/hotfix")
	if err != nil {
		return err
	}
	hc, err := hotfix.LoadTable(ctx, catalog.ToIdentifier("sales", "customers"))
	if err != nil {
		return err
	}
	if _, err := appendCustomers(ctx, hc, map[int64]string{3: "Edsger"}); err != nil {
		return err
	}
	if orders, err = appendOrders(ctx, orders, []order{{4, "apac", 40}}); err != nil {
		return err
	}
	if err := s.merge(ctx, "ingest/staging", "main"); err != nil {
		return err
	}
	if err := s.merge(ctx, "ingest/hotfix", "main"); err != nil {
		return err
	}

	// ingest/daily: work waiting to be merged by the test.
	if err := s.createRef(ctx, "ingest/daily", "BRANCH", "main"); err != nil {
		return err
	}
	etl, err := s.catalog(ctx, "lake@ingest/daily")
	if err != nil {
		return err
	}
	eo, err := etl.LoadTable(ctx, catalog.ToIdentifier("sales", "orders"))
	if err != nil {
		return err
	}
	if eo, err = appendOrders(ctx, eo, []order{{5, "us", 50}, {6, "eu", 60}}); err != nil {
		return err
	}
	if _, err = appendOrders(ctx, eo, []order{{7, "apac", 70}}); err != nil {
		return err
	}
	ec, err := etl.LoadTable(ctx, catalog.ToIdentifier("sales", "customers"))
	if err != nil {
		return err
	}
	tx := ec.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"email"}, iceberg.PrimitiveTypes.String, "contact address", false, nil).Commit(); err != nil {
		return fmt.Errorf("add column email: %w", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit schema change of sales.customers: %w", err)
	}
	if _, err := etl.CreateTable(ctx, catalog.ToIdentifier("sales", "returns"), customersSchema); err != nil {
		return fmt.Errorf("create sales.returns: %w", err)
	}
	// main moves on too, in another partition of sales.orders, so the
	// merge the test makes is an Iceberg-level one (disjoint: the
	// branch's snapshots are cherry-picked onto main's).
	if _, err = appendOrders(ctx, orders, []order{{8, "latam", 80}}); err != nil {
		return err
	}
	// sales.regions: a table only the structural merge request below
	// changes, so once approved it lands whatever main did meanwhile.
	regions, err := main.CreateTable(ctx, catalog.ToIdentifier("sales", "regions"), customersSchema)
	if err != nil {
		return fmt.Errorf("create sales.regions: %w", err)
	}
	if _, err := appendCustomers(ctx, regions, map[int64]string{1: "eu", 2: "us"}); err != nil {
		return err
	}
	if err := s.merge(ctx, "ingest/staging", "main"); err != nil {
		return err
	}
	// A branch for the test to delete.
	if err := s.createRef(ctx, "users/alex/scratch", "BRANCH", "main"); err != nil {
		return err
	}
	return s.queueBranches(ctx)
}

// queueBranches leaves two branches for the test to publish through the
// merge queue: ingest/queued appends to sales.orders in a partition no
// other branch touches (a cherry-pick once main moved), and
// users/admin/regions-code adds a column to sales.regions (structural: it
// waits for a reviewer).
func (s *seeder) queueBranches(ctx context.Context) error {
	if err := s.createRef(ctx, "ingest/queued", "BRANCH", "main"); err != nil {
		return err
	}
	q, err := s.catalog(ctx, "lake@ingest/queued")
	if err != nil {
		return err
	}
	qo, err := q.LoadTable(ctx, catalog.ToIdentifier("sales", "orders"))
	if err != nil {
		return err
	}
	if _, err := appendOrders(ctx, qo, []order{{9, "mena", 90}}); err != nil {
		return err
	}
	if err := s.createRef(ctx, "users/admin/regions-code", "BRANCH", "main"); err != nil {
		return err
	}
	f, err := s.catalog(ctx, "lake@users/admin/regions-code")
	if err != nil {
		return err
	}
	fr, err := f.LoadTable(ctx, catalog.ToIdentifier("sales", "regions"))
	if err != nil {
		return err
	}
	tx := fr.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"code"}, iceberg.PrimitiveTypes.String, "ISO region code", false, nil).Commit(); err != nil {
		return fmt.Errorf("add column code: %w", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit schema change of sales.regions: %w", err)
	}
	return nil
}

func (s *seeder) catalog(ctx context.Context, warehouse string) (*rest.Catalog, error) {
	opts := []rest.Option{rest.WithWarehouseLocation(warehouse)}
	if s.token != "" {
		opts = append(opts, rest.WithOAuthToken(s.token))
	}
	cat, err := rest.NewCatalog(ctx, "floe", s.base, opts...)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", warehouse, err)
	}
	return cat, nil
}

type order struct {
	id     int64
	region string
	amount float64
}

func appendOrders(ctx context.Context, tbl *table.Table, rows []order) (*table.Table, error) {
	return appendRecords(ctx, tbl, func(b *array.RecordBuilder) {
		for _, r := range rows {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.StringBuilder).Append(r.region)
			b.Field(2).(*array.Float64Builder).Append(r.amount)
		}
	})
}

func appendCustomers(ctx context.Context, tbl *table.Table, rows map[int64]string) (*table.Table, error) {
	return appendRecords(ctx, tbl, func(b *array.RecordBuilder) {
		for id, name := range rows {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(name)
		}
	})
}

func appendRecords(ctx context.Context, tbl *table.Table, fill func(*array.RecordBuilder)) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := tbl.AppendTable(ctx, at, 1024, nil)
	if err != nil {
		return nil, fmt.Errorf("append to %v: %w", tbl.Identifier(), err)
	}
	return out, nil
}

type ref struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Hash string `json:"hash"`
}

func (s *seeder) getRef(ctx context.Context, name string) (ref, error) {
	var out struct {
		Reference ref `json:"reference"`
	}
	err := s.do(ctx, http.MethodGet, "/api/v2/trees/"+url.PathEscape(name), nil, &out)
	return out.Reference, err
}

func (s *seeder) createRef(ctx context.Context, name, typ, from string) error {
	src, err := s.getRef(ctx, from)
	if err != nil {
		return err
	}
	q := url.Values{"name": {name}, "type": {typ}}
	return s.do(ctx, http.MethodPost, "/api/v2/trees?"+q.Encode(), src, nil)
}

func (s *seeder) merge(ctx context.Context, from, into string) error {
	src, err := s.getRef(ctx, from)
	if err != nil {
		return err
	}
	dst, err := s.getRef(ctx, into)
	if err != nil {
		return err
	}
	body := map[string]any{"fromRefName": from, "fromHash": src.Hash, "message": "Merge " + from + " into " + into}
	return s.do(ctx, http.MethodPost, "/api/v2/trees/"+url.PathEscape(into+"@"+dst.Hash)+"/history/merge", body, nil)
}

func (s *seeder) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
