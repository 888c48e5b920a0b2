package function

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/output"
	"github.com/shard-router/shard-router/pkg/route"
)

// The capacity types are output contracts (CapacityReport), so they live
// in package v1alpha1 with the other documents users script against.
type (
	Capacity          = v1alpha1.Capacity
	Usage             = v1alpha1.Usage
	ContextCapacity   = v1alpha1.ContextCapacity
	DataStoreCapacity = v1alpha1.DataStoreCapacity
	BudgetStatus      = v1alpha1.BudgetStatus
)

// capacity computes out.Capacity and returns its results: an info result
// per context and per datastore, and a warning (an error with enforce) per
// exceeded budget limit.
func (c *Engine) capacity(items []Item, out *Outcome) framework.Results {
	contexts := c.Config.Contexts()
	capa := &Capacity{Contexts: make([]ContextCapacity, len(contexts))}
	stores := make([]map[string]int, len(contexts)) // datastore name -> index
	for i := range contexts {
		ctx := &contexts[i]
		p := fmt.Sprintf("spec.contexts[%d]", i)
		cc := ContextCapacity{Name: ctx.Name, Budget: budgetStatus(ctx.Budget, p+".budget")}
		cc.DataStores = append(cc.DataStores, DataStoreCapacity{Name: v1alpha1.DefaultDataStore,
			Budget: budgetStatus(ctx.DefaultDataStoreBudget, p+".defaultDataStoreBudget")})
		stores[i] = map[string]int{v1alpha1.DefaultDataStore: 0}
		for k, ds := range ctx.DataStores {
			stores[i][ds.Name] = len(cc.DataStores)
			cc.DataStores = append(cc.DataStores, DataStoreCapacity{Name: ds.Name,
				Budget: budgetStatus(ds.Budget, fmt.Sprintf("%s.dataStores[%d].budget", p, k))})
		}
		capa.Contexts[i] = cc
	}
	for i, d := range out.Routing.Decisions {
		switch {
		case d.Reason == route.NotRouted:
			capa.NotRouted++
			continue
		case !d.Routed():
			capa.Failed++
			continue
		}
		it := &items[i]
		size := it.Size + labelSize(it, d.Label)
		for k, ctx := range d.Contexts {
			cc := &capa.Contexts[ctx]
			ds := &cc.DataStores[stores[ctx][out.Stores[i][k]]]
			cc.Objects++
			cc.Bytes += size
			ds.Objects++
			ds.Bytes += size
			capa.Total.Objects++
			capa.Total.Bytes += size
		}
	}
	var res framework.Results
	total := capa.Total
	capa.Total.ObjectShare, capa.Total.ByteShare = share(total.Objects, total.Objects), share(total.Bytes, total.Bytes)
	for i := range capa.Contexts {
		cc := &capa.Contexts[i]
		cc.ObjectShare, cc.ByteShare = share(cc.Objects, total.Objects), share(cc.Bytes, total.Bytes)
		res = append(res, c.usageResult(cc.Name, "", cc.Usage))
		res = append(res, c.budgetResults(cc.Name, "", cc.Usage, cc.Budget)...)
		for k := range cc.DataStores {
			ds := &cc.DataStores[k]
			ds.ObjectShare, ds.ByteShare = share(ds.Objects, total.Objects), share(ds.Bytes, total.Bytes)
			res = append(res, c.usageResult(cc.Name, ds.Name, ds.Usage))
			res = append(res, c.budgetResults(cc.Name, ds.Name, ds.Usage, ds.Budget)...)
		}
	}
	out.Capacity = capa
	return res
}

func (c *Engine) usageResult(ctx, ds string, u Usage) *framework.Result {
	tags := map[string]string{"context": ctx, "objects": strconv.FormatInt(u.Objects, 10), "bytes": strconv.FormatInt(u.Bytes, 10)}
	if ds != "" {
		tags["datastore"] = ds
	}
	return &framework.Result{Severity: framework.Info, Tags: tags,
		Message: fmt.Sprintf("capacity: %s: %d objects (%s), %s", where(ctx, ds), u.Objects, output.Percent(u.ObjectShare), bytesText(u.Bytes, output.Percent(u.ByteShare)))}
}

// budgetResults checks a usage against its budget and records what it
// exceeds in b.Exceeded. Exceeding means strictly more than the limit.
func (c *Engine) budgetResults(ctx, ds string, u Usage, b *BudgetStatus) framework.Results {
	if b == nil {
		return nil
	}
	sev, verdict := framework.Warning, "over budget"
	if b.Enforce {
		sev, verdict = framework.Error, "over budget (enforce: true)"
	}
	var res framework.Results
	add := func(limit string, lim, actual int64, human func(int64) string) {
		b.Exceeded = append(b.Exceeded, limit)
		res = append(res, &framework.Result{Severity: sev, ResourceRef: c.Ref, File: c.File,
			Field: &framework.Field{Path: b.Field + "." + limit},
			Tags:  budgetTags(ctx, ds, limit, lim, actual),
			Message: fmt.Sprintf("%s: %s would hold %s, more than its %s of %s (%s.%s)",
				verdict, where(ctx, ds), human(actual), limit, human(lim), b.Field, limit)})
	}
	if b.MaxObjects != nil && u.Objects > *b.MaxObjects {
		add("maxObjects", *b.MaxObjects, u.Objects, func(n int64) string { return strconv.FormatInt(n, 10) + " objects" })
	}
	if b.MaxBytes != nil && u.Bytes > *b.MaxBytes {
		add("maxBytes", *b.MaxBytes, u.Bytes, func(n int64) string { return bytesText(n, "") })
	}
	return res
}

func budgetTags(ctx, ds, limit string, lim, actual int64) map[string]string {
	tags := map[string]string{"context": ctx, "budget": limit,
		"limit": strconv.FormatInt(lim, 10), "actual": strconv.FormatInt(actual, 10)}
	if ds != "" {
		tags["datastore"] = ds
	}
	return tags
}

func budgetStatus(b *v1alpha1.Budget, path string) *BudgetStatus {
	if b == nil {
		return nil
	}
	s := &BudgetStatus{MaxObjects: b.MaxObjects, Enforce: b.Enforce, Field: path}
	if b.MaxBytes != nil {
		n := b.MaxBytes.Value()
		s.MaxBytes = &n
	}
	return s
}

// labelSize is how many bytes stamping the placement label adds to an
// object's JSON encoding.
func labelSize(it *Item, l *route.Label) int64 {
	if l == nil {
		return 0
	}
	if cur, ok := it.Labels[l.Key]; ok {
		return jsonStringLen(l.Value) - jsonStringLen(cur)
	}
	entry := jsonStringLen(l.Key) + 1 + jsonStringLen(l.Value)
	switch {
	case it.Labels == nil: // ,"labels":{entry}
		return int64(len(`,"labels":{}`)) + entry
	case len(it.Labels) == 0:
		return entry
	}
	return 1 + entry // ,entry
}

func where(ctx, ds string) string {
	if ds == "" {
		return fmt.Sprintf("context %q", ctx)
	}
	return fmt.Sprintf("context %q datastore %q", ctx, ds)
}

func share(part, total int64) float64 {
	if total == 0 {
		return 0
	}
	return math.Round(float64(part)/float64(total)*1e4) / 1e4
}

// bytesText renders "562 bytes", or "3565158 bytes (3.4 MiB)" from 1 KiB
// on, with note (a share) added in the parentheses.
func bytesText(n int64, note string) string {
	var notes []string
	if n >= 1024 || n <= -1024 {
		notes = append(notes, output.HumanBytes(n))
	}
	if note != "" {
		notes = append(notes, note)
	}
	if len(notes) == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d bytes (%s)", n, strings.Join(notes, ", "))
}
