package split

import (
	"bytes"
	"regexp"
	"strconv"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// A file that several contexts hold with the same resources (broadcast
// resources) differs between them only in the values of the context and
// datastore annotations. It is encoded once, with tokens for those values,
// and each context's copy is the template with its own values: the bytes
// that encoding it for that context gives, whenever the template can
// promise that (see templatable); otherwise each context encodes its own.

// sharedFile is the template of a file several contexts hold.
type sharedFile struct {
	once sync.Once
	data []byte
	ok   bool // false: encode the file for each context
	err  error
}

// The tokens stand for the two values while encoding the template.
const (
	contextToken   = "shard-router-template-context-8d1e3f"
	dataStoreToken = "shard-router-template-datastore-8d1e3f"
)

// plainName matches a value that kyaml's single quotes write as it is.
var plainName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// share marks the files that several contexts hold with the same resources.
func (p *Layout) share() {
	byKey := map[string]*sharedFile{}
	var key []byte
	for _, pkg := range p.Packages {
		for k := range pkg.files {
			f := &pkg.files[k]
			if f.items == nil || len(p.out.Routing.Decisions[f.items[0]].Contexts) < 2 {
				continue
			}
			key = append(key[:0], f.path...)
			for _, i := range f.items {
				key = strconv.AppendInt(append(key, 0), int64(i), 10)
			}
			s := byKey[string(key)]
			if s == nil {
				s = &sharedFile{}
				byKey[string(key)] = s
			}
			f.shared = s
		}
	}
}

// renderShared renders a shared file for one context from its template;
// ok is false when the template cannot promise the same bytes.
func (pkg *Package) renderShared(f *plannedFile) (data []byte, ok bool, err error) {
	s := f.shared
	s.once.Do(func() { s.data, s.ok, s.err = pkg.layout.template(f) })
	if s.err != nil || !s.ok {
		return nil, false, s.err
	}
	ds, ok := pkg.layout.fileDataStore(f, pkg.index)
	if !ok || !plainName.MatchString(pkg.Context) {
		return nil, false, nil
	}
	data = bytes.ReplaceAll(s.data, []byte("'"+contextToken+"'"), []byte("'"+pkg.Context+"'"))
	return bytes.ReplaceAll(data, []byte("'"+dataStoreToken+"'"), []byte("'"+ds+"'")), true, nil
}

// fileDataStore is the one datastore the file's resources have in context
// ctx; ok is false when they differ or it is not a plain name.
func (p *Layout) fileDataStore(f *plannedFile, ctx int) (string, bool) {
	ds := ""
	for k, i := range f.items {
		d, _ := p.out.StoreIn(i, ctx)
		if k > 0 && d != ds {
			return "", false
		}
		ds = d
	}
	return ds, plainName.MatchString(ds)
}

// template encodes the file with the tokens as the annotation values.
func (p *Layout) template(f *plannedFile) ([]byte, bool, error) {
	nodes := make([]*yaml.RNode, len(f.items))
	for j, i := range f.items {
		n, err := p.in.Node(i)
		if err != nil {
			return nil, false, err
		}
		if !p.templatable(i, n) {
			return nil, false, nil
		}
		if err := p.out.ApplyItemIn(i, n, contextToken, dataStoreToken); err != nil {
			return nil, false, nil // prepare reports it
		}
		nodes[j] = n
	}
	data, err := yamlio.Encode(nodes, p.in.IO())
	if err != nil {
		return nil, false, nil // each context reports it
	}
	n := len(f.items)
	ok := bytes.Count(data, []byte(contextToken)) == n && bytes.Count(data, []byte("'"+contextToken+"'")) == n &&
		bytes.Count(data, []byte(dataStoreToken)) == n && bytes.Count(data, []byte("'"+dataStoreToken+"'")) == n
	return data, ok, nil
}

// templatable reports whether item i can be encoded with the tokens: it
// must be routed, have no path defaulted, and every annotation it holds
// already with a value that some context would write must be written as
// Apply writes it (single-quoted, without comments), since Apply leaves a
// value that is already right as it is.
func (p *Layout) templatable(i int, n *yaml.RNode) bool {
	d := p.out.Routing.Decisions[i]
	if !d.Routed() || p.in.Loc(i).Defaulted {
		return false
	}
	meta := yamlio.Lookup(n.YNode(), "metadata")
	if n.YNode().Anchor != "" || meta == nil || meta.Kind != yaml.MappingNode || meta.Anchor != "" || yamlio.HasMergeKey(meta) {
		return false // anchors: Apply de-anchors, which only encoding each copy shows
	}
	annos := yamlio.Lookup(meta, "annotations")
	if annos == nil {
		return true
	}
	if annos.Kind != yaml.MappingNode || annos.Anchor != "" || yamlio.HasMergeKey(annos) {
		return false
	}
	for k := 0; k+1 < len(annos.Content); k += 2 {
		key, v := annos.Content[k].Value, annos.Content[k+1]
		if v.Kind != yaml.ScalarNode || v.Anchor != "" {
			return false
		}
		if key != v1alpha1.ContextAnnotation && key != v1alpha1.DataStoreAnnotation {
			continue
		}
		for n, c := range d.Contexts {
			want := p.cfg.Names[c]
			if key == v1alpha1.DataStoreAnnotation {
				want = p.out.Stores[i][n]
			}
			if v.Value == want && (v.Style != yaml.SingleQuotedStyle || v.HeadComment+v.LineComment+v.FootComment != "") {
				return false
			}
		}
	}
	return true
}
