package output

import (
	_ "embed"
	"io"
	"strconv"
	"strings"
)

// The pages are written by plain Go rather than html/template: a template
// calls methods by name through reflection, and a binary that can do that
// keeps every exported method of every type it links (about 26 MB of
// shard-router's 82 MB, and 14 MB of memory at every start, function mode
// included). What the templates did is kept byte for byte: values are
// escaped as html/template escapes text and quoted attribute values, and
// markup can only be a constant (see markup).

//go:embed html/style.css
var pageStyle string

// page is an HTML page being written.
type page struct{ b strings.Builder }

// markup is literal HTML. An untyped constant converts to it implicitly, a
// string variable does not: a value cannot reach the page unescaped by
// mistake.
type markup string

// htmlEscaper replaces what html/template's escaper for text and quoted
// attributes replaces, with the same entities.
var htmlEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// m writes markup.
func (p *page) m(s markup) *page {
	p.b.WriteString(string(s))
	return p
}

// t writes a value, escaped.
func (p *page) t(s string) *page {
	_, _ = htmlEscaper.WriteString(&p.b, s)
	return p
}

// n writes a number.
func (p *page) n(n int) *page { return p.n64(int64(n)) }

func (p *page) n64(n int64) *page {
	p.b.WriteString(strconv.FormatInt(n, 10))
	return p
}

// when writes s when cond holds.
func (p *page) when(cond bool, s markup) *page {
	if cond {
		p.m(s)
	}
	return p
}

// writePage writes a page whole: one write.
func writePage(w io.Writer, render func(*page)) error {
	var p page
	render(&p)
	_, err := io.WriteString(w, p.b.String())
	return err
}

// head opens a page: its title, the inline style sheet (light and dark),
// and the body.
func (p *page) head(title markup) {
	p.m(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>`).m(title).m("</title>\n<style>\n").m(markup(pageStyle)).m("</style>\n</head>\n<body>\n")
}

// foot closes a page, naming the document it shows.
func (p *page) foot(apiVersion, kind string) {
	p.m("<footer>").t(apiVersion).m(" ").t(kind).m(" · rendered by shard-router · the same document as -o json</footer>\n</body>\n</html>\n")
}

// count writes a count, highlighted unless 0.
func (p *page) count(n int) {
	if n == 0 {
		p.m(`<span class="zero">0</span>`)
		return
	}
	p.m(`<span class="hot">`).n(n).m("</span>")
}

// badge writes a state in words, with its colour and symbol.
func (p *page) badge(s signal, state string) {
	p.m(`<span class="badge `).t(s.Class).m(`">`).t(s.Symbol).m(" ").t(state).m("</span>")
}

// listItems writes each item as an <li>, escaped.
func (p *page) listItems(prefix markup, items []string) {
	for _, it := range items {
		p.m("<li>").m(prefix).t(it).m("</li>")
	}
}
