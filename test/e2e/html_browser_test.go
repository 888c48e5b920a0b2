//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/output"
)

// requireChromium returns Chromium's path: $CHROMIUM, else chromium on
// PATH (Debian's package, installed by hack/install-packages.sh).
func requireChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "chromium", "bash hack/install-packages.sh installs Debian's chromium, or set CHROMIUM")
	return ""
}

// browserPage is what the test reads from a loaded page.
type browserPage struct {
	// Rows are the cells' text of every row of a context (data-context).
	Rows map[string][]string `json:"rows"`
	// Head are the header cells of the capacity heatmap.
	Head []string `json:"head"`
	// Total are the cells of the heatmap's total row.
	Total []string `json:"total"`
	// Visible is the page's text as rendered (folded details are not);
	// All is every text node's.
	Visible, All string
	Scripts      int `json:"scripts"`
	// DocWidth is the document's scrollWidth and clientWidth.
	DocWidth [2]int `json:"docWidth"`
	// Matrix is each .matrix table's bounding right edge and its box's
	// scrollWidth and clientWidth.
	Matrix [][3]float64 `json:"matrix"`
}

const readPage = `({
  rows: Object.fromEntries([...document.querySelectorAll('tr[data-context]')].map(r => [r.dataset.context, [...r.cells].map(c => c.innerText.trim())])),
  head: [...document.querySelectorAll('#capacity thead th')].map(c => c.innerText.trim()),
  total: [...document.querySelectorAll('#total td')].map(c => c.innerText.trim()),
  Visible: document.body.innerText,
  All: document.body.textContent,
  scripts: document.scripts.length,
  docWidth: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
  matrix: [...document.querySelectorAll('.matrix')].map(e => [e.getBoundingClientRect().right, e.parentElement.scrollWidth, e.parentElement.clientWidth]),
})`

// TestHTMLPagesInChromium opens each -o html page of the goldens
// (pkg/output/testdata/html: status, plan and report, of 2 and 64
// contexts; a plan with a rollout's gates and apply's page of one) from a file:// URL in headless Chromium, and checks that it
// loads nothing but itself, logs no console error, runs no script, shows
// every number of its JSON document (the same directory) in its text, and
// has no horizontal scroll at 1280 px (neither the page nor its matrix) nor
// at 390 px (the page). So do the plan and report pages that the binary
// writes for examples/datastores. Screenshots at 1280x800 (light and dark) and 390x844
// are written to testdata/screenshots for a person to look at.
func TestHTMLPagesInChromium(t *testing.T) {
	browser := startChromium(t)
	root := repoRoot(t)
	pages := filepath.Join(root, "pkg", "output", "testdata", "html")
	shots := screenshotDir(t)
	// The pages the binary writes for an example, against its -o json.
	t.Run("example", func(t *testing.T) {
		bin := shardRouter(t)
		pkg := filepath.Join(root, "examples", "datastores")
		dir, empty := t.TempDir(), t.TempDir()
		for kind, args := range map[string][]string{"report": {"report", pkg}, "plan": {"plan", pkg, "--previous", empty}} {
			for _, format := range []string{"html", "json"} {
				res := mustRun(t, cmdSpec{}, bin, append(args, "-o", format)...)
				writeFile(t, filepath.Join(dir, kind+"."+format), res.Stdout)
			}
			doc, err := os.ReadFile(filepath.Join(dir, kind+".json"))
			if err != nil {
				t.Fatal(err)
			}
			page := loadPage(t, browser, filepath.Join(dir, kind+".html"), filepath.Join(shots, kind+"-example-datastores"))
			if kind == "plan" {
				checkPlanPage(t, page, doc)
			} else {
				checkReportPage(t, page, doc)
			}
		}
	})
	// apply's page of a rollout whose canary's gate failed.
	t.Run("apply-gates", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(pages, "apply-gates.json"))
		if err != nil {
			t.Fatal(err)
		}
		checkApplyGatesPage(t, loadPage(t, browser, filepath.Join(pages, "apply-gates.html"), filepath.Join(shots, "apply-gates")), doc)
	})
	for _, kind := range []string{"status", "plan", "report"} {
		names := []string{kind + "-2", kind + "-64"}
		if kind == "status" {
			names = append(names, "status-engine") // a split for Flux: the engine sync column
			names = append(names, "status-gates")  // OUT_DIR's record of the gates
		}
		if kind == "plan" {
			names = append(names, "plan-gates") // a rollout: each wave's gates
		}
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				file := filepath.Join(pages, name+".html")
				doc, err := os.ReadFile(filepath.Join(pages, name+".json"))
				if err != nil {
					t.Fatal(err)
				}
				page := loadPage(t, browser, file, filepath.Join(shots, name))
				switch kind {
				case "status":
					checkStatusPage(t, page, doc)
					checkStatusGates(t, page, doc)
				case "plan":
					checkPlanPage(t, page, doc)
				case "report":
					checkReportPage(t, page, doc)
				}
			})
		}
	}
}

// checkApplyGatesPage checks apply's page of a rollout with gates: a row
// per context with its status and counts, and every wave, gate, phase and
// measured value of the report in the visible text.
func checkApplyGatesPage(t *testing.T, page browserPage, data []byte) {
	r := decode[v1alpha1.ApplyReport](t, data)
	if len(page.Rows) != len(r.Contexts) {
		t.Errorf("%d rows, %d contexts", len(page.Rows), len(r.Contexts))
	}
	for _, c := range r.Contexts {
		cells := row(t, page, c.Name)
		wantCells(t, c.Name, cells, map[int]string{0: c.Name, 2: fmt.Sprint(c.Objects), 3: fmt.Sprint(c.Applied)})
		if !strings.Contains(cells[1], string(c.Status)) {
			t.Errorf("%s: status cell %q, want %s", c.Name, cells[1], c.Status)
		}
	}
	for _, w := range r.Waves {
		for _, want := range []string{w.Name, string(w.Status)} {
			if !strings.Contains(page.Visible, want) {
				t.Errorf("wave %s: the page does not show %q", w.Name, want)
			}
		}
		for _, g := range w.Gates {
			counts := fmt.Sprintf("%d/%d/%d/%d", g.Successful, g.Failed, g.Inconclusive, g.Errors)
			for _, want := range []string{g.Gate, string(g.Phase), counts} {
				if !strings.Contains(page.Visible, want) {
					t.Errorf("gate %s in %s: the page does not show %q", g.Gate, g.Context, want)
				}
			}
			for _, m := range g.Measurements {
				if !strings.Contains(page.Visible, m.Value) {
					t.Errorf("gate %s in %s: the page does not show the measurement %q", g.Gate, g.Context, m.Value)
				}
			}
		}
	}
}

// checkStatusGates checks that the status page shows every gate OUT_DIR
// recorded: its wave, verdict, counts and each measurement.
func checkStatusGates(t *testing.T, page browserPage, data []byte) {
	s := decode[v1alpha1.FleetStatus](t, data)
	for _, w := range s.Gates {
		for _, g := range w.Gates {
			counts := fmt.Sprintf("%d/%d/%d/%d", g.Successful, g.Failed, g.Inconclusive, g.Errors)
			for _, want := range []string{w.Wave, g.Gate, string(g.Phase), counts} {
				if !strings.Contains(page.Visible, want) {
					t.Errorf("gate %s in %s: the status page does not show %q", g.Gate, g.Context, want)
				}
			}
			for _, m := range g.Measurements {
				if !strings.Contains(page.Visible, m.Value) {
					t.Errorf("gate %s in %s: the status page does not show the measurement %q", g.Gate, g.Context, m.Value)
				}
			}
		}
	}
}

// startChromium starts headless Chromium for the test, stopped at its end,
// and returns the browser's context; each loadPage opens a tab in it.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	chrome := requireChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.UserDataDir(t.TempDir()), chromedp.Flag("hide-scrollbars", false))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", chrome, err)
	}
	return browser
}

// screenshotDir is where the screenshots go: CI keeps it as an artifact.
func screenshotDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "test", "e2e", "testdata", "screenshots")
}

// loadPage loads file in a new tab, checks what every page must do, and
// writes the screenshots as shot-<width>x<height>[-dark].png.
func loadPage(t *testing.T, browser context.Context, file, shot string) browserPage {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	var mu sync.Mutex
	var requests, problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *runtime.EventConsoleAPICalled:
			problems = append(problems, fmt.Sprintf("console.%s", ev.Type))
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: file}).String()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[browserPage](readPage))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, shot+"-1280x800.png")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, shot+"-1280x800-dark.png")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	narrow, err := chromedp.Run(ctx, chromedp.Evaluate[browserPage](readPage))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, shot+"-390x844.png")

	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 1 || requests[0] != pageURL {
		t.Errorf("requests %q, want only the page %s", requests, pageURL)
	}
	if len(problems) > 0 {
		t.Errorf("console: %q", problems)
	}
	if page.Scripts != 0 {
		t.Errorf("%d scripts", page.Scripts)
	}
	if page.DocWidth[0] > page.DocWidth[1] {
		t.Errorf("at 1280 px the page scrolls horizontally: scrollWidth %d > clientWidth %d", page.DocWidth[0], page.DocWidth[1])
	}
	if len(page.Matrix) == 0 {
		t.Error("no .matrix table")
	}
	for _, m := range page.Matrix {
		if m[0] > float64(page.DocWidth[1]) || m[1] > m[2] {
			t.Errorf("at 1280 px the matrix does not fit: right edge %.0f (page %d), box scrollWidth %.0f > clientWidth %.0f", m[0], page.DocWidth[1], m[1], m[2])
		}
	}
	if narrow.DocWidth[0] > narrow.DocWidth[1] {
		t.Errorf("at 390 px the page scrolls horizontally: scrollWidth %d > clientWidth %d", narrow.DocWidth[0], narrow.DocWidth[1])
	}
	return page
}

func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode[T any](t *testing.T, data []byte) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// row returns a context's cells, failing when the page has no row for it.
func row(t *testing.T, page browserPage, name string) []string {
	t.Helper()
	cells, ok := page.Rows[name]
	if !ok {
		t.Fatalf("no row for context %s", name)
	}
	return cells
}

func wantCells(t *testing.T, what string, cells []string, want map[int]string) {
	t.Helper()
	for i, w := range want {
		if i >= len(cells) || cells[i] != w {
			t.Errorf("%s: cell %d is %q, want %q (cells %q)", what, i, at(cells, i), w, cells)
		}
	}
}

func at(cells []string, i int) string {
	if i < len(cells) {
		return cells[i]
	}
	return "<none>"
}

func wantText(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// checkStatusPage: each context's row counts its objects as the JSON
// holds them (objects, current and not current of the package; drifted,
// extra, not applied), says whether it was reached, and every object that
// needs attention and every error is named.
func checkStatusPage(t *testing.T, page browserPage, data []byte) {
	s := decode[v1alpha1.FleetStatus](t, data)
	if len(page.Rows) != len(s.Contexts) {
		t.Errorf("%d rows, %d contexts", len(page.Rows), len(s.Contexts))
	}
	for _, c := range s.Contexts {
		var objects, current, notCurrent, drifted, extra, notApplied int
		for _, o := range c.Objects {
			switch o.Inventory {
			case v1alpha1.ObjectExtra:
				extra++
			case v1alpha1.ObjectNotApplied:
				notApplied++
			}
			if o.Inventory != v1alpha1.ObjectExtra {
				objects++
				if o.Status == v1alpha1.StatusCurrent {
					current++
				} else {
					notCurrent++
				}
			}
			if len(o.Drift) > 0 {
				drifted++
			}
			if o.NeedsAttention() {
				wantText(t, "the page", page.Visible, o.ObjectRef.String())
			}
		}
		reachable := "yes"
		if !c.Reachable {
			reachable = "✕ no"
		}
		cells := row(t, page, c.Name)
		extraText, notAppliedText := fmt.Sprint(extra), fmt.Sprint(notApplied)
		if c.Inventory.EngineKeeps() {
			extraText, notAppliedText = "? unknown", "? unknown"
		}
		wantCells(t, c.Name, cells, map[int]string{0: c.Name, 2: reachable, 4: fmt.Sprint(objects), 5: fmt.Sprint(current),
			6: fmt.Sprint(notCurrent), 7: fmt.Sprint(drifted), 8: extraText, 9: notAppliedText})
		if e := c.Engine; e != nil {
			// The engine's sync, in words: Ready and its reason, the
			// revision, and the engine's object.
			want := []string{"Ready=" + e.Ready, e.Reason, e.Revision, e.Engine + " " + e.Kind + " " + e.Namespace + "/" + e.Name}
			if e.Ready == "" {
				want[0] = e.Kind + " missing"
			}
			if e.Ready != "True" {
				want = append(want, e.Message)
			}
			for _, w := range want {
				if !strings.Contains(at(cells, 10), w) {
					t.Errorf("%s: engine sync cell %q lacks %q", c.Name, at(cells, 10), w)
				}
			}
		} else if len(cells) > 10 {
			t.Errorf("%s: %d cells, no engine sync to show: %q", c.Name, len(cells), cells)
		}
		if !strings.Contains(cells[3], c.Inventory.State) || !strings.Contains(cells[3], c.Inventory.Namespace+"/"+c.Inventory.Name) {
			t.Errorf("%s: inventory cell %q, want %s %s/%s", c.Name, cells[3], c.Inventory.State, c.Inventory.Namespace, c.Inventory.Name)
		}
		if c.Error != "" {
			wantText(t, "the page", page.Visible, c.Error)
		}
	}
}

// checkPlanPage: each context's row holds the JSON's counts; every prune
// is visible, every create and update is on the page (folded), and so are
// the errors, warnings, moves and datastore and override changes.
func checkPlanPage(t *testing.T, page browserPage, data []byte) {
	p := decode[v1alpha1.SplitPlan](t, data)
	if len(page.Rows) != len(p.Contexts) {
		t.Errorf("%d rows, %d contexts", len(page.Rows), len(p.Contexts))
	}
	for _, c := range p.Contexts {
		cells := row(t, page, c.Name)
		wantCells(t, c.Name, cells, map[int]string{0: c.Name, 2: fmt.Sprint(len(c.Create)), 3: fmt.Sprint(len(c.Update)),
			4: fmt.Sprint(len(c.Prune)), 5: fmt.Sprint(c.Unchanged), 6: fmt.Sprint(c.Previous)})
		if !strings.Contains(cells[1], string(c.State)) {
			t.Errorf("%s: state cell %q, want %s", c.Name, cells[1], c.State)
		}
		for _, r := range c.Prune {
			wantText(t, "the visible page", page.Visible, r.String())
		}
		for _, r := range slices.Concat(c.Create, c.Update) {
			wantText(t, "the page", page.All, r.String())
		}
	}
	wantText(t, "the visible page", page.Visible, slices.Concat(p.Errors, p.Warnings)...)
	for _, m := range p.Moves {
		wantText(t, "the visible page", page.Visible, m.Ref.String(), strings.Join(m.From, ", "), strings.Join(m.To, ", "))
	}
	for _, d := range p.DataStoreChanges {
		wantText(t, "the visible page", page.Visible, d.Ref.String(), d.Context)
	}
	for _, o := range p.OverrideChanges {
		wantText(t, "the visible page", page.Visible, o.Context, o.Resource)
	}
}

// checkReportPage: every cell of the heatmap holds the objects, exact
// bytes and shares of its context and datastore, and its budget.
func checkReportPage(t *testing.T, page browserPage, data []byte) {
	r := decode[v1alpha1.CapacityReport](t, data)
	if len(page.Rows) != len(r.Contexts) {
		t.Errorf("%d rows, %d contexts", len(page.Rows), len(r.Contexts))
	}
	cell := func(what, text string, u v1alpha1.Usage, b *v1alpha1.BudgetStatus) {
		lines := strings.Split(text, "\n")
		for _, w := range []string{fmt.Sprintf("%d obj", u.Objects), fmt.Sprintf("%d B", u.Bytes), output.HumanBytes(u.Bytes),
			fmt.Sprintf("%.1f%% · %.1f%%", u.ObjectShare*100, u.ByteShare*100)} {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: cell %q lacks the line %q", what, text, w)
			}
		}
		if b == nil {
			return
		}
		if b.MaxObjects != nil {
			wantText(t, what, text, fmt.Sprintf("of max %d obj", *b.MaxObjects))
		}
		if b.MaxBytes != nil {
			wantText(t, what, text, fmt.Sprintf("of max %d B", *b.MaxBytes))
		}
		for _, e := range b.Exceeded {
			wantText(t, what, text, "OVER", e)
		}
	}
	for _, c := range r.Contexts {
		cells := row(t, page, c.Name)
		wantCells(t, c.Name, cells, map[int]string{0: c.Name})
		cell(c.Name, at(cells, 1), c.Usage, c.Budget)
		for _, ds := range c.DataStores {
			i := slices.Index(page.Head, ds.Name)
			if i < 2 {
				t.Errorf("no column for datastore %s (header %q)", ds.Name, page.Head)
				continue
			}
			cell(c.Name+"/"+ds.Name, at(cells, i), ds.Usage, ds.Budget)
		}
	}
	cell("total", at(page.Total, 1), r.Total, nil)
	wantText(t, "the visible page", page.Visible, fmt.Sprintf("Not routed (local config, Kptfile, function config, inventory): %d. Failed (see the errors): %d.", r.NotRouted, r.Failed))
	for _, p := range r.Placed {
		wantText(t, "the visible page", page.Visible, p.Namespace+" → "+p.Context)
	}
	for _, res := range r.Results {
		wantText(t, "the visible page", page.Visible, res.Message)
	}
}
