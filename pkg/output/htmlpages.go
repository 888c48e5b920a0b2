package output

import (
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The three pages, section by section: what the views in html.go hold, in
// the order a reader needs it.

func (v statusView) write(p *page) {
	p.head("shard-router status")
	p.m("\n<h1>shard-router status</h1>\n<p class=\"doc\">Every context's objects as its cluster holds them, against the context's package and its live inventory.</p>\n<p class=\"headline\">").
		t(v.Headline).m("</p>\n")
	for _, run := range v.Doc.Runs {
		p.m(`<div class="caution" data-run="`).t(run.Holder).m(`"><strong>! `).t(runText(run, v.Doc.ReadAt, plain)).m("</strong></div>\n")
	}
	if r := v.Doc.Rollout; r != nil {
		writeRollout(p, r)
	}
	if len(v.Failed) > 0 {
		p.m(`<div class="alert"><strong>✕ Unreachable or failed (`).n(len(v.Failed)).m("):</strong>\n<ul>")
		for _, r := range v.Failed {
			p.m("<li><code>").t(r.Name).m("</code> is ").t(r.State).m(": ")
			if r.Error != "" {
				p.t(r.Error)
			} else {
				p.m("some objects could not be read (see their error)")
			}
			p.m("</li>")
		}
		p.m("</ul></div>")
	}
	for _, r := range v.Rows {
		if r.OutDirMismatch != nil && r.Error == "" {
			p.m("\n" + `<div class="caution" data-outdir-mismatch="`).t(r.Name).m(`">! <code>`).t(r.Name).m("</code> is ").t(r.State).m(": ").t(r.OutDirMismatch.Message).m("</div>")
		}
	}
	p.m("\n\n<h2>Fleet (").n(len(v.Rows)).m(" contexts, ").n(v.InSync).m(" in sync)</h2>\n<table class=\"stack matrix\" id=\"fleet\">\n")
	if v.HasEngine {
		p.m(`<colgroup><col style="width:13%"><col style="width:13%"><col style="width:7%"><col style="width:16%"><col><col><col><col><col><col><col style="width:19%"></colgroup>`)
	} else {
		p.m(`<colgroup><col style="width:16%"><col style="width:17%"><col style="width:8%"><col style="width:21%"><col><col><col><col><col><col></colgroup>`)
	}
	p.m("\n"+`<thead><tr><th>context</th><th>state</th><th>reachable</th><th>inventory</th><th class="n">objects</th><th class="n">current</th><th class="n">not current</th><th class="n">drifted</th><th class="n">extra</th><th class="n">not applied</th>`).
		when(v.HasEngine, "<th>engine sync</th>").m("</tr></thead>\n<tbody>\n")
	for _, r := range v.Rows {
		v.writeRow(p, r)
	}
	p.m("</tbody>\n</table>\n")
	for _, r := range v.Rows {
		if r.Inventory.EngineKeeps() {
			p.m(`<p class="warn" data-inventory-note="`).t(r.Name).m(`">? <code>`).t(r.Name).m("</code>: ").t(r.Inventory.Note).m("</p>\n")
		}
	}
	p.m(`<p class="small">objects, current and not current count the package's objects; extra are in the live inventory only (the next apply prunes them); not applied are in the package only.`).
		when(v.HasEngine, " engine sync is the GitOps engine's own status of the context's sync: its object's Ready condition, reason and the revision it last applied.").
		m("</p>\n")
	if hasRecords(v.Doc) {
		v.writeRecords(p)
	}
	writeGates(p, "What each wave's gates measured in each of its contexts, in the last apply that baked the wave (OUT_DIR's record): the verdict, the measurements counted (successful, failed, inconclusive, errors), and the last measurements, oldest first.", v.Doc.Gates)
	p.m("\n<h2>Needs attention</h2>\n").
		when(len(v.Attention) == 0, `<p class="ok">✓ No object needs attention.</p>`).m("\n")
	for _, g := range v.Attention {
		writeAttention(p, g)
	}
	p.m("\n")
	p.foot(v.Doc.APIVersion, v.Doc.Kind)
}

// writeRow is one context's row of the fleet matrix.
func (v statusView) writeRow(p *page, r statusRow) {
	p.m(`<tr data-context="`).t(r.Name).m(`"><td><code>`).t(r.Name).m(`</code></td><td data-label="state">`)
	p.badge(r.Signal, r.State)
	p.m(`</td><td data-label="reachable">`)
	if r.Reachable {
		p.m("yes")
	} else {
		p.m(`<span class="bad">✕ no</span>`)
	}
	p.m(`</td><td data-label="inventory"><span>`)
	if r.Inventory.State == v1alpha1.InventoryFound {
		p.m("found")
	} else {
		p.m(`<span class="warn">! `).t(r.Inventory.State).m("</span>")
	}
	p.m(` <span class="small">`).t(r.Inventory.Namespace).m("/").t(r.Inventory.Name).m(`</span></span></td><td class="n" data-label="objects">`).
		n(r.Objects).m(`</td><td class="n" data-label="current">`).n(r.Current).m(`</td><td class="n" data-label="not current">`)
	p.count(r.NotCurrent)
	p.m(`</td><td class="n" data-label="drifted">`)
	p.compared(r, r.Drifted)
	p.m(`</td><td class="n" data-label="extra">`)
	p.unlessEngineKeeps(r, r.Extra)
	p.m(`</td><td class="n" data-label="not applied">`)
	p.unlessEngineKeeps(r, r.NotApplied)
	p.m("</td>")
	if v.HasEngine {
		p.m(`<td data-label="engine sync">`)
		if r.Engine != nil {
			writeEngine(p, r.Engine)
		} else {
			p.m("-")
		}
		p.m("</td>")
	}
	p.m("</tr>\n")
}

// writeRollout is OUT_DIR's unfinished rollout, first: its waves, the
// contexts it changed, and how to resume it or roll it back.
func writeRollout(p *page, r *v1alpha1.RolloutSummary) {
	p.m(`<div class="caution" id="rollout"><strong>! `).t(rolloutHeadline(r, plain)).m("</strong>\n<ul>")
	for _, c := range r.Contexts {
		p.m(`<li data-rollout-context="`).t(c.Name).m(`"><code>`).t(c.Name).m("</code> (wave <code>").t(c.Wave).m("</code>): a rollback gives it ").t(rollbackTo(c)).m("</li>")
	}
	p.m("</ul>\n")
	if wait, _ := rolloutWayOn(r, plain); wait != "" {
		p.t(wait).m("<br>")
	}
	p.m("To resume it: <code>").t(r.Resume).m("</code><br>To roll it back: <code>").t(r.Rollback).m("</code></div>\n")
}

// writeRecords is each context's last apply, cluster and lock, for the
// contexts whose cluster says something.
func (v statusView) writeRecords(p *page) {
	p.m("\n<h2>Last apply</h2>\n<p class=\"doc\">What each cluster records of the last shard-router apply that wrote the context (its Lease beside the inventory), the cluster's identity (the UID of its kube-system Namespace), and the lock a running apply holds.</p>\n" +
		`<table class="stack" id="records">
<colgroup><col style="width:14%"><col style="width:7%"><col style="width:20%"><col style="width:14%"><col style="width:12%"><col style="width:15%"><col></colgroup>
<thead><tr><th>context</th><th class="n">serial</th><th>applied by</th><th>applied at</th><th>outcome</th><th>cluster UID</th><th>lock</th></tr></thead>
<tbody>
`)
	for _, row := range v.Rows {
		r := row.Record
		if r == nil {
			continue
		}
		p.m(`<tr data-record="`).t(row.Name).m(`"><td><code>`).t(row.Name).m(`</code></td><td class="n" data-label="serial">`).t(recordSerial(r)).
			m(`</td><td data-label="applied by">`).t(appliedBy(r)).m(`</td><td data-label="applied at">`).t(recordTime(r.AppliedAt)).
			m(`</td><td data-label="outcome">`)
		switch {
		case r.Killed():
			p.m(`<span class="warn">! killed</span><br><span class="small">the run that wrote it `).t(killedText(false)).m("</span>")
		case r.Outcome == "" || r.Outcome == "applied":
			p.t(orDash(r.Outcome))
			if st := settledText(r); st != "" {
				p.m(`<br><span class="small">`).t(st).m("</span>")
			}
		default:
			p.m(`<span class="warn">! `).t(recordOutcome(r)).m("</span>")
		}
		p.m(`</td><td data-label="cluster UID"><code>`).t(orDash(r.ClusterUID)).m("</code>")
		if r.Server != "" {
			p.m(`<br><span class="small">`).t(r.Server).m("</span>")
		}
		p.m(`</td><td data-label="lock">`)
		if r.Lock != nil {
			p.m(`<span class="warn">! `).t(lockText(r.Lock)).m("</span>")
		} else {
			p.m("-")
		}
		if r.Error != "" {
			p.m(`<br><span class="bad">✕ record not read in full: `).t(r.Error).m("</span>")
		}
		p.m("</td></tr>\n")
	}
	p.m("</tbody>\n</table>\n")
}

// unlessEngineKeeps writes a count that is unknown when a GitOps engine
// keeps the context's inventory.
func (p *page) unlessEngineKeeps(r statusRow, n int) {
	if r.Inventory.EngineKeeps() {
		p.m(`<span class="warn">? unknown</span>`)
		return
	}
	p.compared(r, n)
}

// compared writes a count of a comparison with OUT_DIR: "-" for a context
// OUT_DIR is stale for, whose objects were not compared with it.
func (p *page) compared(r statusRow, n int) {
	if r.Stale() {
		p.m(`<span class="warn">-</span>`)
		return
	}
	p.count(n)
}

// writeEngine is a context's GitOps engine sync: its Ready condition, why,
// the revision and the object that holds it.
func writeEngine(p *page, e *v1alpha1.EngineStatus) {
	switch {
	case e.Ready == "True":
		p.m(`<span class="ok">✓ Ready=True</span>`)
	case e.Ready != "":
		p.m(`<span class="warn">! Ready=`).t(e.Ready).m("</span>")
	default:
		p.m(`<span class="bad">✕ `).t(e.Kind).m(" missing</span>")
	}
	if e.Reason != "" {
		p.m(" (").t(e.Reason).m(")")
	}
	if e.Revision != "" {
		p.m(`<br><span class="small">at <code>`).t(e.Revision).m("</code></span>")
	}
	p.m(`<br><span class="small">`).t(e.Engine).m(" ").t(e.Kind).m(" ").t(e.Namespace).m("/").t(e.Name).m("</span>")
	if e.Message != "" && e.Ready != "True" {
		p.m(`<br><span class="small">`).t(e.Message).m("</span>")
	}
}

// writeAttention is one context's objects that need attention.
func writeAttention(p *page, g attentionGroup) {
	p.m(`<section data-attention="`).t(g.Name).m("\">\n<h3><code>").t(g.Name).m("</code>: ").n(len(g.Objects) + g.More).m(` object(s) need attention</h3>
<table class="stack">
<colgroup><col style="width:28%"><col style="width:11%"><col style="width:11%"><col style="width:22%"><col></colgroup>
<thead><tr><th>object</th><th>status</th><th>inventory</th><th>drift</th><th>note</th></tr></thead>
<tbody>
`)
	for _, o := range g.Objects {
		p.m("<tr><td><code>").t(o.Ref).m(`</code></td><td data-label="status"><span class="`).t(o.StatusSig.Class).m(`">`).t(o.StatusSig.Symbol).m(" ").t(o.Status).
			m(`</span></td><td data-label="inventory"><span class="`).t(o.InventorySig.Class).m(`">`).t(o.InventorySig.Symbol).m(" ").t(o.Inventory).
			m(`</span></td><td data-label="drift">`)
		if len(o.Drift) > 0 {
			p.m(`<span class="warn">! <code>`).t(strings.Join(o.Drift, ", ")).m("</code></span>")
		} else {
			p.m("-")
		}
		p.m(`</td><td data-label="note">`).t(o.Note).m("</td></tr>\n")
	}
	p.m("</tbody>\n</table>\n")
	if g.More > 0 {
		p.m(`<p class="small">... and `).n(g.More).m(" more (<code>shard-router status -o json</code> lists them all)</p>\n")
	}
	p.m("</section>\n")
}

func (v planView) write(p *page) {
	p.head("shard-router plan")
	p.m("\n<h1>shard-router plan</h1>\n<p class=\"doc\">What kpt live apply of each context package of the new split would do in that cluster, against the previous split.</p>\n<p class=\"headline\">").
		t(v.Headline).m("</p>\n")
	if v.Doc.Apply != nil {
		p.m(`<p class="doc">Apply writes with `).t(v.Doc.Apply.Describe()).m(".</p>\n")
	}
	if len(v.Doc.Errors) > 0 {
		p.m(`<div class="alert" id="refusal"><strong>✕ Refused: `).n(len(v.Doc.Errors)).m(" error(s); nothing may be applied until they are fixed.</strong>\n<ul>")
		p.listItems("", v.Doc.Errors)
		p.m("</ul></div>")
	}
	p.m("\n")
	if v.Refused != 0 {
		p.m(`<div class="alert"><strong>✕ `).n(v.Refused).m(" refused move(s), datastore or etcd override change(s)</strong> (listed first below).</div>")
	}
	p.m("\n")
	if len(v.Mass) > 0 {
		p.m(`<div class="caution"><strong>! Mass deletion</strong> in `).t(strings.Join(v.Mass, ", ")).m(".</div>")
	}
	p.m("\n")
	if v.Prune != 0 {
		p.m(`<div class="caution"><strong>! `).n(v.Prune).m(" object(s) will be deleted</strong> (pruned): every one is named below.</div>")
	}
	p.m("\n\n<h2>Contexts (").n(len(v.Rows)).m(", ").n(v.Changed).m(` changed)</h2>
<table class="stack matrix" id="contexts">
<colgroup><col style="width:22%"><col style="width:10%"><col><col><col><col><col><col style="width:20%"></colgroup>
<thead><tr><th>context</th><th>state</th><th class="n">create</th><th class="n">update</th><th class="n">prune</th><th class="n">unchanged</th><th class="n">previous</th><th>note</th></tr></thead>
<tbody>
`)
	for _, r := range v.Rows {
		writePlanRow(p, r)
	}
	p.m("</tbody>\n</table>\n\n")
	if len(v.Doc.Waves) > 0 {
		writePlanWaves(p, v.Doc.Waves)
	}
	v.writeChanges(p)
	if len(v.Doc.Warnings) > 0 {
		p.m("<h2>Warnings (").n(len(v.Doc.Warnings)).m(")</h2>\n<div class=\"caution\"><ul>")
		p.listItems("! ", v.Doc.Warnings)
		p.m("</ul></div>")
	}
	p.m("\n\n")
	if len(v.Objects) > 0 {
		p.m("<h2>Objects per context</h2>\n")
		for _, o := range v.Objects {
			writePlanObjects(p, o)
		}
	}
	p.m("\n\n")
	v.writeDiffs(p)
	p.m("\n")
	p.foot(v.Doc.APIVersion, v.Doc.Kind)
}

// writePlanRow is one context's row of the plan's summary.
func writePlanRow(p *page, r planRow) {
	p.m(`<tr data-context="`).t(r.Name).m(`"><td><code>`).t(r.Name).m(`</code></td><td data-label="state">`)
	switch r.State {
	case v1alpha1.ContextDropped:
		p.m(`<span class="warn">! dropped</span>`)
	case v1alpha1.ContextAdded:
		p.m("+ added")
	default:
		p.m("kept")
	}
	p.m(`</td><td class="n" data-label="create">`).n(len(r.Create)).m(`</td><td class="n" data-label="update">`).n(len(r.Update)).m(`</td><td class="n" data-label="prune">`)
	p.count(len(r.Prune))
	p.m(`</td><td class="n" data-label="unchanged">`).n(r.Unchanged).m(`</td><td class="n" data-label="previous">`).n(r.Previous).m(`</td><td data-label="note">`)
	switch {
	case r.MassPrune:
		p.m(`<span class="bad">✕ mass deletion: `).n(len(r.Prune)).m(" of ").n(r.Previous).m("</span>")
	case r.Changed:
		p.m("changes")
	default:
		p.m(`<span class="zero">no changes</span>`)
	}
	p.m("</td></tr>\n")
}

// writeChanges is the plan's moves, datastore changes and etcd override
// changes, each section only when it has rows.
func (v planView) writeChanges(p *page) {
	if len(v.Moves) > 0 {
		p.m("<h2>Moves (").n(len(v.Moves)).m(`)</h2>
<table class="stack" id="moves">
<colgroup><col style="width:34%"><col><col><col style="width:12%"></colgroup>
<thead><tr><th>object</th><th>from</th><th>to</th><th>verdict</th></tr></thead>
<tbody>
`)
		for _, m := range v.Moves {
			p.m("<tr><td><code>").t(m.Ref).m(`</code></td><td data-label="from">`).t(m.From).m(`</td><td data-label="to">`).t(m.To).m(`</td><td data-label="verdict">`)
			writeRefused(p, m.Refused)
			p.m("</td></tr>\n")
		}
		p.m("</tbody>\n</table>\n<p class=\"small\">A move leaves some contexts and enters others: the objects left behind are pruned there, the new copies created (the handoff).</p>")
	}
	p.m("\n\n")
	if len(v.Stores) > 0 {
		p.m("<h2>Datastore changes (").n(len(v.Stores)).m(`)</h2>
<table class="stack" id="datastores">
<colgroup><col style="width:34%"><col style="width:20%"><col><col><col style="width:12%"></colgroup>
<thead><tr><th>object</th><th>context</th><th>from</th><th>to</th><th>verdict</th></tr></thead>
<tbody>
`)
		for _, s := range v.Stores {
			p.m("<tr><td><code>").t(s.Ref).m(`</code></td><td data-label="context"><code>`).t(s.Context).m(`</code></td><td data-label="from">`).t(s.From).
				m(`</td><td data-label="to">`).t(s.To).m(`</td><td data-label="verdict">`)
			writeRefused(p, s.Refused)
			p.m("</td></tr>\n")
		}
		p.m("</tbody>\n</table>")
	}
	p.m("\n\n")
	if len(v.Overrides) > 0 {
		p.m("<h2>Etcd override changes (").n(len(v.Overrides)).m(`)</h2>
<p class="small">kube-apiserver's --etcd-servers-overrides changes; it never migrates data.</p>
<table class="stack" id="overrides">
<colgroup><col style="width:16%"><col style="width:22%"><col><col><col style="width:14%"></colgroup>
<thead><tr><th>context</th><th>resource</th><th>from</th><th>to</th><th>verdict</th></tr></thead>
<tbody>
`)
		for _, o := range v.Overrides {
			p.m("<tr><td><code>").t(o.Context).m(`</code></td><td data-label="resource"><code>`).t(o.Resource).m(`</code></td><td data-label="from">`).t(o.From).
				m(`</td><td data-label="to">`).t(o.To).m(`</td><td data-label="verdict">`)
			if o.Allowed {
				p.m(`<span class="ok">✓ `).t(o.Verdict).m("</span>")
			} else {
				p.m(`<span class="bad">✕ `).t(o.Verdict).m("</span>")
			}
			p.m("</td></tr>\n")
		}
		p.m("</tbody>\n</table>")
	}
	p.m("\n\n")
}

func writeRefused(p *page, refused bool) {
	if refused {
		p.m(`<span class="bad">✕ refused</span>`)
		return
	}
	p.m(`<span class="ok">✓ allowed</span>`)
}

// writePlanObjects names what one context creates, updates and prunes.
func writePlanObjects(p *page, o planObjects) {
	p.m("<details").when(o.Open, " open").m(` data-objects="`).t(o.Name).m(`"><summary><code>`).t(o.Name).m("</code> (").t(string(o.State)).m("):")
	for i, l := range o.Lists {
		p.when(i > 0, ",").m(" ").n(len(l.Refs)).m(" to ").t(l.Title)
	}
	p.m("</summary>\n")
	for _, l := range o.Lists {
		p.m("<h3>To ").t(l.Title).m(" (").n(len(l.Refs)).m(")</h3>\n<ul class=\"refs\">")
		for _, r := range l.Refs {
			p.m("<li><code>").t(r).m("</code></li>")
		}
		p.m("</ul>\n")
	}
	p.m("</details>\n")
}

// writeDiffs is each distinct diff once, folded.
func (v planView) writeDiffs(p *page) {
	if len(v.Diffs) == 0 {
		return
	}
	p.m("<h2>Diffs (").n(len(v.Diffs)).m(" distinct, of ").n(v.DiffCount).m(" updates)</h2>\n")
	for _, d := range v.Diffs {
		p.m("<details><summary><code>").t(d.Ref).m("</code> (<code>").t(d.File).m("</code>) in ").t(d.Where).m("</summary>\n<pre class=\"diff\">")
		for _, l := range d.Lines {
			p.m("<span")
			if l.Class != "" {
				p.m(` class="`).t(l.Class).m(`"`)
			}
			p.m(">").t(l.Text).m("\n</span>")
		}
		p.m("</pre>\n</details>\n")
	}
}

func (v reportView) write(p *page) {
	p.head("shard-router report")
	p.m("\n<h1>shard-router report</h1>\n<p class=\"doc\">What each context (cluster) and each of its datastores (etcd) would hold once the package is applied.</p>\n<p class=\"headline\">").
		n(len(v.Rows)).m(" contexts, ").n64(v.Total.Objects).m(" objects, ").t(HumanBytes(v.Total.Bytes)).m(" (").n64(v.Total.Bytes).m(" B) in all.</p>\n")
	if len(v.Errors) > 0 {
		p.m(`<div class="alert"><strong>✕ `).n(len(v.Errors)).m(" error(s):</strong><ul>")
		p.listItems("", v.Errors)
		p.m("</ul></div>")
	}
	p.m("\n")
	if len(v.Warnings) > 0 {
		p.m(`<div class="caution"><strong>! `).n(len(v.Warnings)).m(" warning(s):</strong><ul>")
		p.listItems("", v.Warnings)
		p.m("</ul></div>")
	}
	p.m("\n\n")
	v.writeHeatmap(p)
	p.m("<p>Not routed (local config, Kptfile, function config, inventory): ").n(v.Doc.NotRouted).
		m(". Failed (see the errors): ").n(v.Doc.Failed).m(".</p>\n\n")
	if len(v.Doc.Placed) > 0 {
		p.m("<h2>New Namespaces placed by spec.placement (").n(len(v.Doc.Placed)).m(")</h2>\n<ul>")
		for _, pl := range v.Doc.Placed {
			p.m("<li><code>").t(pl.Namespace).m("</code> → <code>").t(pl.Context).m("</code>")
			if pl.Label != "" {
				p.m(" (label <code>").t(pl.Label).m("</code>)")
			}
			p.m("</li>")
		}
		p.m("</ul>")
	}
	p.m("\n")
	p.foot(v.Doc.APIVersion, v.Doc.Kind)
}

// writeHeatmap is the contexts × datastores table, its legend first.
func (v reportView) writeHeatmap(p *page) {
	p.m(`<h2>Capacity: contexts × datastores</h2>
<div class="legend"><span>colour: share of the budget where one is set, else bytes against the largest datastore</span>
<span><svg width="16" height="12"><rect width="16" height="12" style="fill:var(--h1)"/></svg> up to 25%</span>
<span><svg width="16" height="12"><rect width="16" height="12" style="fill:var(--h2)"/></svg> up to 50%</span>
<span><svg width="16" height="12"><rect width="16" height="12" style="fill:var(--h3)"/></svg> up to 75%</span>
<span><svg width="16" height="12"><rect width="16" height="12" style="fill:var(--h4)"/></svg> more</span>
<span><svg width="16" height="12"><rect width="16" height="12" style="fill:var(--h5)" stroke="var(--bad)" stroke-width="3"/></svg> OVER budget</span></div>
<p class="small">Each cell: objects; size; exact bytes; share of all objects · of all bytes; the budget and its use, if any. “—”: the context has no such datastore.</p>
<div class="box">
<table class="heat matrix" id="capacity" style="min-width:`).n(v.MinWidth).m("px\">\n<colgroup><col style=\"width:130px\"><col>")
	for range v.Stores {
		p.m("<col>")
	}
	p.m("</colgroup>\n<thead><tr><th>context</th><th>context total</th>")
	for _, s := range v.Stores {
		p.m("<th><code>").t(s).m("</code></th>")
	}
	p.m("</tr></thead>\n<tbody>\n")
	for _, r := range v.Rows {
		p.m(`<tr data-context="`).t(r.Name).m(`"><td><code>`).t(r.Name).m("</code></td>")
		writeHeatCell(p, r.Total)
		for _, c := range r.Cells {
			writeHeatCell(p, c)
		}
		p.m("</tr>\n")
	}
	p.m(`<tr id="total"><td><strong>total</strong></td>`)
	writeHeatCell(p, v.Total)
	for range v.Stores {
		p.m("<td></td>")
	}
	p.m("</tr>\n</tbody>\n</table>\n</div>\n")
}

// writeHeatCell is one cell of the heatmap.
func writeHeatCell(p *page, c heatCell) {
	if !c.Present {
		p.m(`<td class="zero">—</td>`)
		return
	}
	p.m(`<td class="h`).n(c.Level).m(`"><b>`).n64(c.Objects).m("</b> obj<br>")
	if c.Bytes >= 1024 {
		p.t(HumanBytes(c.Bytes)).m("<br>")
	}
	p.m(`<span class="small">`).n64(c.Bytes).m(` B</span><br><span class="small">`).t(Percent(c.ObjectShare)).m(" · ").t(Percent(c.ByteShare)).m("</span>")
	if c.Use != "" {
		p.m("<br>").t(c.Use)
	}
	if len(c.Over) > 0 {
		p.m(`<br><strong class="bad">✕ OVER `).t(strings.Join(c.Over, ", ")).m("</strong>")
	}
	p.m("</td>")
}
