package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var reportPkg = filepath.Join("testdata", "report-pkg")

func runReportCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, append([]string{"report"}, args...))
	return code, out.String(), errOut.String()
}

// reportJSON mirrors the documented JSON field names, so that renaming one
// fails here.
type reportJSON struct {
	APIVersion, Kind string
	Contexts         []struct {
		Name                   string
		Objects, Bytes         int64
		ObjectShare, ByteShare float64
		Budget                 *struct {
			MaxObjects, MaxBytes *int64
			Enforce              bool
			Field                string
			Exceeded             []string
		}
		DataStores []struct {
			Name                   string
			Objects, Bytes         int64
			ObjectShare, ByteShare float64
			Budget                 *struct {
				MaxObjects, MaxBytes *int64
				Enforce              bool
				Field                string
				Exceeded             []string
			}
		}
	}
	Total struct {
		Objects, Bytes         int64
		ObjectShare, ByteShare float64
	}
	NotRouted, Failed int
	Placed            []struct{ Namespace, Context, Label string }
	Results           []struct {
		Message, Severity string
		ResourceRef       map[string]string
		Field             struct{ Path string }
		File              struct {
			Path  string
			Index int
		}
		Tags map[string]string
	}
}

func decodeReport(t *testing.T, s string) reportJSON {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var r reportJSON
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, s)
	}
	return r
}

func TestReportJSON(t *testing.T) {
	code, stdout, stderr := runReportCLI(t, "", reportPkg, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeReport(t, stdout)
	if r.APIVersion != "shardrouter.dev/v1alpha1" || r.Kind != "CapacityReport" {
		t.Errorf("apiVersion/kind %q %q", r.APIVersion, r.Kind)
	}
	type counts struct {
		name    string
		objects int64
	}
	var got []counts
	var sum int64
	for _, c := range r.Contexts {
		got = append(got, counts{c.Name, c.Objects})
		for _, ds := range c.DataStores {
			got = append(got, counts{c.Name + "/" + ds.Name, ds.Objects})
		}
		sum += c.Bytes
	}
	// ctx-00: orders, its ConfigMap and Event, and the placed search with
	// its ConfigMap (the file .krmignore hides is not read); ctx-01: billing
	// and its ConfigMap.
	want := []counts{{"ctx-00", 5}, {"ctx-00/default", 4}, {"ctx-00/events", 1}, {"ctx-01", 2}, {"ctx-01/default", 2}}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	if r.Total.Objects != 7 || r.Total.Bytes != sum || sum == 0 || r.NotRouted != 2 || r.Failed != 0 {
		t.Errorf("total %+v (contexts sum to %d bytes), notRouted %d, failed %d", r.Total, sum, r.NotRouted, r.Failed)
	}
	if len(r.Placed) != 1 || r.Placed[0].Namespace != "search" || r.Placed[0].Context != "ctx-00" || r.Placed[0].Label != "example.com/cluster-shard=00" {
		t.Errorf("placed %+v", r.Placed)
	}
	if b := r.Contexts[0].Budget; b == nil || len(b.Exceeded) != 1 || b.Exceeded[0] != "maxObjects" || *b.MaxObjects != 4 {
		t.Errorf("ctx-00 budget %+v", b)
	}
	if len(r.Results) != 1 || r.Results[0].Severity != "warning" || r.Results[0].Field.Path != "spec.contexts[0].budget.maxObjects" ||
		r.Results[0].Tags["actual"] != "5" || r.Results[0].Tags["limit"] != "4" {
		t.Errorf("results %+v", r.Results)
	}
	if !strings.Contains(stderr, `warning: shards.yaml[0]: over budget: context "ctx-00" would hold 5 objects, more than its maxObjects of 4 objects`) {
		t.Errorf("stderr lacks the budget warning:\n%s", stderr)
	}
}

func TestReportTable(t *testing.T) {
	code, stdout, stderr := runReportCLI(t, "", reportPkg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, js, _ := runReportCLI(t, "", reportPkg, "-o", "json")
	r := decodeReport(t, js)
	lines := strings.Split(stdout, "\n")
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "CONTEXT DATASTORE OBJECTS OBJECTS % SIZE BYTES BYTES % BUDGET" {
		t.Errorf("header %q", lines[0])
	}
	// The table and the JSON agree, row by row.
	wantRows := []string{
		"ctx-00 * 5 71.4%", "default 4 57.1%", "events 1 14.3%", "ctx-01 * 2 28.6%", "default 2 28.6%", "TOTAL 7 100.0%",
	}
	for i, w := range wantRows {
		if !strings.HasPrefix(strings.Join(strings.Fields(lines[i+1]), " "), w) {
			t.Errorf("row %d: %q, want it to start with %q", i+1, lines[i+1], w)
		}
	}
	if f := strings.Fields(lines[1]); len(f) < 9 || f[6] != itoa(r.Contexts[0].Bytes) || !strings.HasSuffix(lines[1], "maxObjects 4 OVER") {
		t.Errorf("ctx-00 row %q: want exact bytes %d and the exceeded budget", lines[1], r.Contexts[0].Bytes)
	}
	if !strings.Contains(stdout, "search -> ctx-00 (label example.com/cluster-shard=00)") {
		t.Errorf("the placed namespace is not listed:\n%s", stdout)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestReportStdinMatchesPackage: the same resources as a plain YAML stream
// on stdin, without kpt's path annotations, report the same bytes.
func TestReportStdinMatchesPackage(t *testing.T) {
	var stream strings.Builder
	for _, f := range []string{"namespaces.yaml", filepath.Join("apps", "apps.yaml")} {
		data, err := os.ReadFile(filepath.Join(reportPkg, f))
		if err != nil {
			t.Fatal(err)
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	code, fromStdin, stderr := runReportCLI(t, stream.String(), "-", "--config", filepath.Join(reportPkg, "shards.yaml"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, fromDir, _ := runReportCLI(t, "", reportPkg, "-o", "json")
	a, b := decodeReport(t, fromStdin), decodeReport(t, fromDir)
	if a.Total != b.Total {
		t.Errorf("stdin total %+v, package total %+v", a.Total, b.Total)
	}
	// The package also holds the Kptfile and the ShardConfig, not routed.
	if a.NotRouted != 0 || b.NotRouted != 2 {
		t.Errorf("notRouted: stdin %d, package %d", a.NotRouted, b.NotRouted)
	}
}

func TestReportFailures(t *testing.T) {
	dir := t.TempDir()
	enforced, err := os.ReadFile(filepath.Join(reportPkg, "shards.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	enforcedPath := filepath.Join(dir, "enforced.yaml")
	if err := os.WriteFile(enforcedPath, bytes.Replace(enforced, []byte("budget: {maxObjects: 4}"), []byte("budget: {maxObjects: 4, enforce: true}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: legacy\n  annotations: {shardrouter.dev/context: ctx-09}\n"

	for _, tc := range []struct {
		name, stdin string
		args        []string
		stderr      string
		table       bool // the table is still printed
	}{
		{name: "enforced budget", args: []string{reportPkg, "--config", enforcedPath},
			stderr: `error: ` + enforcedPath + `[0]: over budget (enforce: true): context "ctx-00" would hold 5 objects`, table: true},
		{name: "refused move", stdin: moved, args: []string{"-", "--config", filepath.Join(reportPkg, "shards.yaml")},
			stderr: `Namespace legacy would move from "ctx-09" to "ctx-00"`, table: true},
		{name: "bad format", args: []string{reportPkg, "-o", "xml"}, stderr: `unknown output format "xml": use table, html, json or yaml`},
		{name: "no config", stdin: moved, args: []string{"-"}, stderr: "no shardrouter.dev/v1alpha1 ShardConfig"},
		{name: "two arguments", args: []string{reportPkg, reportPkg}, stderr: "accepts at most 1 arg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runReportCLI(t, tc.stdin, tc.args...)
			if code == 0 {
				t.Errorf("exit 0, want non-zero")
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
			if got := strings.HasPrefix(stdout, "CONTEXT"); got != tc.table {
				t.Errorf("table printed: %v, want %v:\n%s", got, tc.table, stdout)
			}
		})
	}
}

// -o html is a page rendered from the same report as -o json: each
// context's row holds its objects and exact bytes.
func TestReportHTML(t *testing.T) {
	code, page, stderr := runReportCLI(t, "", reportPkg, "-o", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, js, _ := runReportCLI(t, "", reportPkg, "-o", "json")
	r := decodeReport(t, js)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || strings.Contains(page, "<script") {
		t.Fatalf("not a page without script:\n%.300s", page)
	}
	for _, c := range r.Contexts {
		start := strings.Index(page, `<tr data-context="`+c.Name+`">`)
		if start < 0 {
			t.Fatalf("no row for %s", c.Name)
		}
		row := page[start : start+strings.Index(page[start:], "</tr>")]
		for _, want := range []string{"<b>" + itoa(c.Objects) + "</b> obj", itoa(c.Bytes) + " B"} {
			if !strings.Contains(row, want) {
				t.Errorf("row of %s lacks %q:\n%s", c.Name, want, row)
			}
		}
	}
	if !strings.Contains(page, "<code>search</code> → <code>ctx-00</code>") {
		t.Error("the placed namespace is not listed")
	}
}
