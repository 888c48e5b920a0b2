package output

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// A wave's promotion gates, as apply's report and status show them: one
// row per gate and context, its verdict, its measurements counted, and
// the last one.

// gateHeader heads the columns gateCells fills.
const gateHeader = "CONTEXT\tGATE\tPHASE\tS/F/I/E\tLAST"

// gateCells is a gate's row for a terminal, tab-separated.
func gateCells(g v1alpha1.GateResult) string {
	return fmt.Sprintf("%s\t%s\t%s\t%d/%d/%d/%d\t%s", g.Context, g.Gate, g.Phase, g.Successful, g.Failed, g.Inconclusive, g.Errors, lastMeasurement(g))
}

// lastMeasurement is a gate's last measurement: its value and verdict,
// and why it was not a pass.
func lastMeasurement(g v1alpha1.GateResult) string {
	n := len(g.Measurements)
	if n == 0 {
		return "-"
	}
	last := g.Measurements[n-1]
	s := last.Value + " " + string(last.Phase)
	if last.Value == "" {
		s = string(last.Phase)
	}
	if last.Message != "" {
		s += ": " + last.Message
	}
	return s
}

// writeGatesText is status' account of the gates, per wave: when the last
// apply that baked it measured them, and each gate's row.
func writeGatesText(w io.Writer, waves []v1alpha1.WaveGates, buf *bytes.Buffer) error {
	fmt.Fprintln(w, "\nGates, as the last apply that baked each wave measured them:")
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  WAVE\tMEASURED AT\t"+gateHeader)
	for _, wv := range waves {
		for _, g := range wv.Gates {
			fmt.Fprintf(tw, "  %s (%s)\t%s\t%s\n", wv.Wave, wv.Status, recordTime(wv.MeasuredAt.Time), gateCells(g))
		}
	}
	return flushTrimmed(w, tw, buf)
}

// gates is status' account of the gates in markdown, within the budget.
func (m *mdWriter) gates(waves []v1alpha1.WaveGates) {
	rows := []string{"\n**Gates**, as the last apply that baked each wave measured them:\n\n| wave | measured at | context | gate | phase | S/F/I/E | last |\n| --- | --- | --- | --- | --- | ---: | --- |\n"}
	for _, wv := range waves {
		for _, g := range wv.Gates {
			phase := string(g.Phase)
			if g.Phase != v1alpha1.GateSuccessful {
				phase = "**" + phase + "**"
			}
			rows = append(rows, fmt.Sprintf("| `%s` (%s) | %s | `%s` | `%s` | %s | %d/%d/%d/%d | %s |\n", cell(wv.Wave), wv.Status, recordTime(wv.MeasuredAt.Time),
				cell(g.Context), cell(g.Gate), phase, g.Successful, g.Failed, g.Inconclusive, g.Errors, escape(cell(lastMeasurement(g)))))
		}
	}
	m.lines(rows, "gate rows")
}

// writeGates is the gates' table of an HTML page: each gate in each
// context of its wave, with its counts and last measurements.
func writeGates(p *page, doc markup, waves []v1alpha1.WaveGates) {
	n := 0
	for _, w := range waves {
		n += len(w.Gates)
	}
	if n == 0 {
		return
	}
	p.m("\n<h2>Gates (").n(n).m(")</h2>\n<p class=\"doc\">").m(doc).m(`</p>
<table class="stack" id="gates">
<colgroup><col style="width:12%"><col style="width:12%"><col style="width:14%"><col style="width:13%"><col style="width:9%"><col></colgroup>
<thead><tr><th>wave</th><th>context</th><th>gate</th><th>phase</th><th class="n">S/F/I/E</th><th>measurements</th></tr></thead>
<tbody>
`)
	for _, w := range waves {
		for _, g := range w.Gates {
			p.m(`<tr data-gate="`).t(w.Wave + "/" + g.Context + "/" + g.Gate).m(`"><td><code>`).t(w.Wave).m(`</code></td><td data-label="context"><code>`).t(g.Context).
				m(`</code></td><td data-label="gate"><code>`).t(g.Gate).m(`</code> <span class="small">`).t(g.Provider).m(`</span></td><td data-label="phase">`)
			p.badge(gateSignal(g.Phase), string(g.Phase))
			if g.Message != "" {
				p.m(`<br><span class="small">`).t(g.Message).m("</span>")
			}
			p.m(`</td><td class="n" data-label="S/F/I/E">`).n(g.Successful).m("/").n(g.Failed).m("/").n(g.Inconclusive).m("/").n(g.Errors).
				m(`</td><td data-label="measurements">`)
			if len(g.Measurements) == 0 {
				p.m("-")
			} else {
				p.m("<ol>")
				for _, m := range g.Measurements {
					p.m("<li>").t(m.At.UTC().Format("15:04:05")).m(" ")
					p.badge(gateSignal(m.Phase), string(m.Phase))
					if m.Value != "" {
						p.m(" <code>").t(m.Value).m("</code>")
					}
					if m.Message != "" {
						p.m(` <span class="small">`).t(m.Message).m("</span>")
					}
					p.m("</li>")
				}
				p.m("</ol>")
			}
			p.m("</td></tr>\n")
		}
	}
	p.m("</tbody>\n</table>\n")
}
