package split

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// A pulling engine syncs each cluster on its own schedule, so a move
// cannot be one split: the old cluster's engine could prune its copy
// before the new cluster's engine created the new one. A move is handed
// off in two splits instead: the first keeps each moving object in the
// old context's directory as well as in the new one's, and records the
// pending hand-off in HandoffFile (local config, never applied); every
// later split keeps the old copies, and says why, until the new copies are
// known to be Current in the new contexts (Options.Current), and only then
// drops them.

// HandoffFile is the record of pending hand-offs, in gitops.Dir.
const HandoffFile = "shard-router-handoff.yaml"

// HandoffDone starts the message of a finished hand-off.
const HandoffDone = "hand-off done"

// HandoffKind is the record's kind.
const HandoffKind = "Handoff"

// Handoff is one moving object that context From keeps until its copies in
// To are Current.
type Handoff struct {
	Group     string   `json:"group"`
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	From      string   `json:"from"`
	To        []string `json:"to"`
	// DataStore is the object's datastore in From.
	DataStore string `json:"dataStore"`
}

func (h Handoff) key() outdir.ObjKey {
	return outdir.ObjKey{Group: h.Group, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name}
}

// String names the object for messages.
func (h Handoff) String() string { return h.key().Ref().String() }

type handoffRecord struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Metadata   v1alpha1.RecordMeta `json:"metadata"`
	Pending    []Handoff           `json:"pending"`
}

// CurrentFunc reports whether the object is Current in the target's
// cluster (target.Name names the context's engine object).
type CurrentFunc func(target gitops.Target, obj v1alpha1.ObjectRef) bool

// CurrentIn reads `shard-router status -o json`: an object is Current in a
// context when that context was read in full and holds it Current,
// without drift.
func CurrentIn(status *v1alpha1.FleetStatus) CurrentFunc {
	current := map[string]map[v1alpha1.ObjectRef]bool{}
	for _, c := range status.Contexts {
		if c.Failed() {
			continue
		}
		m := map[v1alpha1.ObjectRef]bool{}
		for _, o := range c.Objects {
			if o.Status == v1alpha1.StatusCurrent && len(o.Drift) == 0 && o.Error == "" {
				m[o.ObjectRef] = true
			}
		}
		current[c.Name] = m
	}
	return func(t gitops.Target, obj v1alpha1.ObjectRef) bool { return current[t.Context][obj] }
}

// Kustomization is what CurrentInFlux reads of a Flux Kustomization
// (kustomize.toolkit.fluxcd.io/v1), as kubectl get -o json writes it.
type Kustomization struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name       string `json:"name"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Status struct {
		ObservedGeneration    int64  `json:"observedGeneration"`
		LastAppliedRevision   string `json:"lastAppliedRevision"`
		LastAttemptedRevision string `json:"lastAttemptedRevision"`
		Conditions            []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		Inventory *struct {
			Entries []struct {
				ID string `json:"id"`
			} `json:"entries"`
		} `json:"inventory"`
	} `json:"status"`
}

// CurrentInFlux reads Flux's own status: an object is Current in a
// context when the context's Kustomization (target.Name) is Ready at the
// revision it last attempted, for its current generation, and its
// inventory holds the object. With wait: true, Ready means every object it
// applied is healthy, so the revision that holds the object has landed.
func CurrentInFlux(ks []Kustomization) CurrentFunc {
	held := map[string]map[string]bool{}
	for _, k := range ks {
		if k.Kind != "Kustomization" || k.Status.Inventory == nil || k.Status.ObservedGeneration != k.Metadata.Generation ||
			k.Status.LastAppliedRevision == "" || k.Status.LastAppliedRevision != k.Status.LastAttemptedRevision {
			continue
		}
		ready := false
		for _, c := range k.Status.Conditions {
			ready = ready || (c.Type == "Ready" && c.Status == "True")
		}
		if !ready {
			continue
		}
		m := map[string]bool{}
		for _, e := range k.Status.Inventory.Entries {
			m[e.ID] = true
		}
		held[k.Metadata.Name] = m
	}
	return func(t gitops.Target, o v1alpha1.ObjectRef) bool {
		return held[t.Name][o.Namespace+"_"+o.Name+"_"+o.Group+"_"+o.Kind]
	}
}

// readHandoffs reads the previous split's pending hand-offs.
func readHandoffs(out *outdir.OutDir) (map[outdir.ObjKey][]Handoff, error) {
	if out == nil {
		return nil, nil
	}
	p := filepath.Join(out.Path, gitops.Dir, HandoffFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec handoffRecord
	if err := yaml.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("reading the pending hand-offs %s: %w", filepath.Join(out.Given, gitops.Dir, HandoffFile), err)
	}
	byKey := map[outdir.ObjKey][]Handoff{}
	for _, h := range rec.Pending {
		byKey[h.key()] = append(byKey[h.key()], h)
	}
	return byKey, nil
}

// handOff keeps the moving objects in the contexts they leave until their
// new copies are Current (see above); it runs once the items are routed.
func (p *Layout) handOff(out *outdir.OutDir, current CurrentFunc) error {
	prev, err := readHandoffs(out)
	if err != nil {
		return err
	}
	kept, done := map[string]int{}, map[string]int{}
	for i := range p.items {
		d := p.out.Routing.Decisions[i]
		if !d.Routed() {
			continue
		}
		k := outdir.KeyOf(&p.items[i].Object)
		now, leaving := p.leaving(i, k, out, prev[k])
		from := make([]string, 0, len(leaving))
		for c := range leaving {
			from = append(from, c)
		}
		sort.Slice(from, func(a, b int) bool { return p.cfg.Index(from[a]) < p.cfg.Index(from[b]) })
		for _, c := range from {
			h := Handoff{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, From: c, To: now, DataStore: leaving[c]}
			if h.DataStore == "" {
				h.DataStore = v1alpha1.DefaultDataStore
			}
			if current != nil && p.allCurrent(current, h) {
				done[c]++
				continue
			}
			p.keep(i, h)
			kept[c+" -> "+strings.Join(now, ",")]++
		}
	}
	p.reportHandoffs(kept, done)
	return nil
}

// keep places item i's old copy in the context it leaves, with its
// datastore there, and records the pending hand-off.
func (p *Layout) keep(i int, h Handoff) {
	ctx := p.cfg.Index(h.From)
	p.routed[ctx] = append(p.routed[ctx], i)
	if p.keptIn == nil {
		p.keptIn = map[int]map[int]string{}
	}
	if p.keptIn[i] == nil {
		p.keptIn[i] = map[int]string{}
	}
	p.keptIn[i][ctx] = h.DataStore
	p.handoffs = append(p.handoffs, h)
}

// reportHandoffs says, per move, why the old copies stay (kept: "from ->
// to" to a count), and which contexts finished a hand-off.
func (p *Layout) reportHandoffs(kept, done map[string]int) {
	for _, m := range sortedKeys(kept) {
		from, to, _ := strings.Cut(m, " -> ")
		p.Results = append(p.Results, &framework.Result{Severity: framework.Warning, File: &framework.File{Path: filepath.Join(gitops.Dir, HandoffFile)},
			Message: fmt.Sprintf("moving %d object(s) from %s to %s: %s keeps them until they are Current in %s (a pulling engine syncs each cluster on its own; dropping them now could leave zero copies); once they are, split with --handoff-status FILE (shard-router status -o json, or Flux's Kustomizations as kubectl get -o json writes them) to drop them from %s",
				kept[m], from, to, from, to, from)})
	}
	for _, c := range sortedKeys(done) {
		p.Results = append(p.Results, &framework.Result{Severity: framework.Info,
			Message: fmt.Sprintf(HandoffDone+": %d moved object(s) are Current in their new context(s), so %s no longer holds them", done[c], c)})
	}
}

// leaving returns the contexts item i now goes to, and those it leaves
// (to the datastore it has there): whose previous directory held it, or
// that a pending hand-off names, and that it no longer goes to.
func (p *Layout) leaving(i int, k outdir.ObjKey, out *outdir.OutDir, pending []Handoff) (now []string, leaving map[string]string) {
	for _, c := range p.out.Routing.Decisions[i].Contexts {
		now = append(now, p.cfg.Names[c])
	}
	leaving = map[string]string{}
	if out != nil {
		// The previous split's directories, whatever the item's own
		// annotation says: they are what the engines hold.
		for _, pc := range out.Previous {
			if ds, held := pc.Held[k]; held && p.cfg.Index(pc.Name) >= 0 && !slices.Contains(now, pc.Name) {
				leaving[pc.Name] = ds
			}
		}
	}
	for _, h := range pending {
		if _, ok := leaving[h.From]; !ok && p.cfg.Index(h.From) >= 0 && !slices.Contains(now, h.From) {
			leaving[h.From] = h.DataStore
		}
	}
	return now, leaving
}

// allCurrent reports whether the object is Current in every new context.
func (p *Layout) allCurrent(current CurrentFunc, h Handoff) bool {
	for _, c := range h.To {
		if !current(gitops.Target{Context: c, Name: p.targetName(c)}, h.key().Ref()) {
			return false
		}
	}
	return len(h.To) > 0
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// handoffFile renders the record of the pending hand-offs; nil when none.
func (p *Layout) handoffFile() ([]byte, error) {
	if len(p.handoffs) == 0 {
		return nil, nil
	}
	hs := slices.Clone(p.handoffs)
	sort.Slice(hs, func(a, b int) bool {
		if hs[a].String() != hs[b].String() {
			return hs[a].String() < hs[b].String()
		}
		return hs[a].From < hs[b].From
	})
	rec := handoffRecord{APIVersion: v1alpha1.APIVersion, Kind: HandoffKind, Pending: hs,
		Metadata: v1alpha1.RecordMeta{Name: "handoff", Annotations: map[string]string{"config.kubernetes.io/local-config": "true"}}}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	node, err := yaml.ConvertJSONToYamlNode(string(data))
	if err != nil {
		return nil, err
	}
	s, err := node.String()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# The moves split is handing off: each object stays in the context it leaves until it is Current\n")
	b.WriteString("# in its new context(s). Local config, never applied; the next split reads it.\n")
	b.WriteString(s)
	return b.Bytes(), nil
}

// Kept are the contexts (config indexes, sorted) that keep an old copy of
// item i while its move hands off.
func (p *Layout) Kept(i int) []int {
	var ctxs []int
	for c := range p.keptIn[i] {
		ctxs = append(ctxs, c)
	}
	sort.Ints(ctxs)
	return ctxs
}
