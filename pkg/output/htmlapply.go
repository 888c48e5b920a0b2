package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The apply report's page and the plan's waves: a rollout's waves with
// their promotion gates (issue 34).

// RenderApplyHTML renders an apply report as a page: the headline; the
// errors; one row per context (failed first, then rolled back, then the
// rest); the rollout's waves, each with its gates'
// results in each context and their last measurements; the handoffs, the
// objects held in both clusters and the warnings.
func RenderApplyHTML(w io.Writer, r *v1alpha1.ApplyReport) error {
	return writePage(w, func(p *page) { writeApplyReport(p, r) })
}

// applyHeadline sums up a report in one sentence: the contexts counted by
// status, and whether the apply failed or paused. The text report and the
// page start with it.
func applyHeadline(r *v1alpha1.ApplyReport) string {
	counts := map[v1alpha1.ApplyStatus]int{}
	for _, c := range r.Contexts {
		counts[c.Status]++
	}
	var parts []string
	for _, s := range []v1alpha1.ApplyStatus{v1alpha1.ApplyApplied, v1alpha1.ApplyUnchanged, v1alpha1.ApplyFailed, v1alpha1.ApplyRolledBack, v1alpha1.ApplySkipped} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(string(s))))
		}
	}
	h := fmt.Sprintf("%d context(s)", len(r.Contexts))
	if len(parts) > 0 {
		h += ": " + strings.Join(parts, ", ")
	}
	switch {
	case r.Failed():
		h += "; the apply failed."
	case r.Paused:
		h += "; the rollout paused."
	default:
		h += "."
	}
	if r.DryRun {
		h = "Dry run (server side): no cluster and no file was changed. " + h
	}
	return h
}

// applySignal is how a context's apply status is shown.
func applySignal(s v1alpha1.ApplyStatus) signal {
	switch s {
	case v1alpha1.ApplyApplied, v1alpha1.ApplyUnchanged:
		return signalOK
	case v1alpha1.ApplyFailed:
		return signalBad
	}
	return signalWarn
}

// waveSignal is how a wave's status is shown.
func waveSignal(s v1alpha1.WaveStatus) signal {
	switch s {
	case v1alpha1.WaveApplied, v1alpha1.WaveUnchanged:
		return signalOK
	case v1alpha1.WaveHalted:
		return signalBad
	}
	return signalWarn
}

// gateSignal is how a gate's or a measurement's phase is shown.
func gateSignal(s v1alpha1.GatePhase) signal {
	switch s {
	case v1alpha1.GateSuccessful:
		return signalOK
	case v1alpha1.GateFailed, v1alpha1.GateError:
		return signalBad
	}
	return signalWarn
}

func writeApplyReport(p *page, r *v1alpha1.ApplyReport) {
	p.head("shard-router apply")
	p.m("\n<h1>shard-router apply</h1>\n<p class=\"doc\">What apply did in each context, wave by wave, and what each wave's gates measured.</p>\n<p class=\"headline\">").
		t(applyHeadline(r)).m("</p>\n")
	if r.Apply != nil {
		p.m(`<p class="doc">Written with `).t(r.Apply.Describe()).m(".</p>\n")
	}
	if len(r.Errors) > 0 {
		p.m(`<div class="alert" id="errors"><strong>✕ `).n(len(r.Errors)).m(" error(s)</strong>\n<ul>")
		p.listItems("", r.Errors)
		p.m("</ul></div>\n")
	}
	p.m("\n<h2>Contexts (").n(len(r.Contexts)).m(`)</h2>
<table class="stack matrix" id="contexts">
<colgroup><col style="width:16%"><col style="width:12%"><col><col><col><col><col><col style="width:30%"></colgroup>
<thead><tr><th>context</th><th>status</th><th class="n">objects</th><th class="n">applied</th><th class="n">reconciled</th><th class="n">pruned</th><th class="n">failed</th><th>error</th></tr></thead>
<tbody>
`)
	for _, c := range applyOrder(r) {
		p.m(`<tr data-context="`).t(c.Name).m(`"><td><code>`).t(c.Name).m(`</code></td><td data-label="status">`)
		p.badge(applySignal(c.Status), string(c.Status))
		p.m(`</td><td class="n" data-label="objects">`).n(c.Objects).m(`</td><td class="n" data-label="applied">`).n(c.Applied).
			m(`</td><td class="n" data-label="reconciled">`).n(c.Reconciled).m(`</td><td class="n" data-label="pruned">`).n(c.Pruned).
			m(`</td><td class="n" data-label="failed">`)
		p.count(c.Failed)
		p.m(`</td><td data-label="error">`).t(c.Error)
		if len(c.Failures) > 0 {
			p.m("<ul>")
			p.listItems("", c.Failures)
			p.m("</ul>")
		}
		p.m("</td></tr>\n")
	}
	p.m("</tbody>\n</table>\n")
	if len(r.Waves) > 0 {
		writeApplyWaves(p, r)
	}
	writeHandoffs(p, "Handoffs", "the new contexts get each object first; the old one prunes it once every new copy is Current.", "handoffs", r.Handoffs)
	writeHandoffs(p, "Held in both", "the old context still holds these; apply again once the new context is fixed.", "held", r.HeldInBoth)
	if len(r.Warnings) > 0 {
		p.m("<h2>Warnings (").n(len(r.Warnings)).m(")</h2>\n<div class=\"caution\"><ul>")
		p.listItems("! ", r.Warnings)
		p.m("</ul></div>\n")
	}
	p.m("\n")
	p.foot(r.APIVersion, r.Kind)
}

// writeApplyWaves is the rollout's waves in order, then each wave's gates
// in each context with their counts and last measurements.
func writeApplyWaves(p *page, r *v1alpha1.ApplyReport) {
	p.m("\n<h2>Waves (").n(len(r.Waves)).m(`)</h2>
<table class="stack" id="waves">
<colgroup><col style="width:16%"><col style="width:14%"><col style="width:30%"><col></colgroup>
<thead><tr><th>wave</th><th>status</th><th>contexts</th><th>error</th></tr></thead>
<tbody>
`)
	for _, w := range r.Waves {
		p.m(`<tr data-wave="`).t(w.Name).m(`"><td><code>`).t(w.Name).m(`</code></td><td data-label="status">`)
		p.badge(waveSignal(w.Status), string(w.Status))
		p.m(`</td><td data-label="contexts">`).t(strings.Join(w.Contexts, ", ")).m(`</td><td data-label="error">`).t(w.Error).m("</td></tr>\n")
	}
	p.m("</tbody>\n</table>\n")
	if r.Paused {
		p.m(`<p class="warn">! Paused: the next apply measures a Paused wave again, then applies the Pending waves.</p>` + "\n")
	}
	var waves []v1alpha1.WaveGates
	for _, w := range r.Waves {
		if len(w.Gates) > 0 {
			waves = append(waves, v1alpha1.WaveGates{Wave: w.Name, Status: w.Status, Gates: w.Gates})
		}
	}
	writeGates(p, "Each gate in each context of its wave: its verdict, its measurements counted (successful, failed, inconclusive, errors), and its last measurements, oldest first.", waves)
}

// writeHandoffs lists moved objects with their old and new contexts.
func writeHandoffs(p *page, title markup, doc markup, id markup, hs []v1alpha1.Handoff) {
	if len(hs) == 0 {
		return
	}
	p.m("\n<h2>").m(title).m(" (").n(len(hs)).m(")</h2>\n<p class=\"doc\">").m(doc).m("</p>\n<ul id=\"").m(id).m("\">")
	for _, h := range hs {
		p.m("<li><code>").t(h.Ref.String()).m("</code>: <code>").t(h.From).m("</code> → ").t(strings.Join(h.To, ", ")).m("</li>")
	}
	p.m("</ul>\n")
}

// writePlanWaves is the rollout's waves in the order apply applies them,
// each with its contexts and its gates (none: kstatus and the bake only).
func writePlanWaves(p *page, waves []v1alpha1.PlanWave) {
	p.m("<h2>Rollout (").n(len(waves)).m(` waves)</h2>
<p class="doc">apply applies the waves in this order; each wave's gates measure each of its contexts during its bake and once at its end, and decide whether the rollout goes on.</p>
<table class="stack" id="waves">
<colgroup><col style="width:16%"><col style="width:30%"><col></colgroup>
<thead><tr><th>wave</th><th>contexts</th><th>gates</th></tr></thead>
<tbody>
`)
	for _, w := range waves {
		p.m(`<tr data-wave="`).t(w.Name).m(`"><td><code>`).t(w.Name).m(`</code></td><td data-label="contexts">`).t(strings.Join(w.Contexts, ", ")).m(`</td><td data-label="gates">`)
		if len(w.Gates) == 0 {
			p.m(`<span class="small">none: every object Current for the bake</span>`)
		} else {
			p.m("<ul>")
			p.listItems("", w.Gates)
			p.m("</ul>")
		}
		p.m("</td></tr>\n")
	}
	p.m("</tbody>\n</table>\n\n")
}
