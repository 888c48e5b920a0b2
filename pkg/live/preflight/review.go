package preflight

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// access is one question to RBAC: may this identity verb the resource
// (in namespace, named name)?
type access struct {
	verb        string
	gr          schema.GroupResource
	subresource string
	namespace   string
	name        string
}

// answerOf is an access review's answer.
type answerOf struct {
	allowed bool
	why     string
}

// Reviews are the answers of access reviews, shared by the contexts of a
// run that reach one cluster as one identity (the same cluster and user
// entries of the kubeconfig, the same impersonation): RBAC answers them
// alike, so each question is sent once, not once per context. The zero
// value is ready to use.
type Reviews struct {
	calls sync.Map // access → *reviewCall
}

// reviewCall is one question's answer, asked by one checker at a time. A
// review that failed is not kept: the next checker to need it asks it
// again, with its own context, so that one context's failure (or its
// cancelled requests) never becomes another's.
type reviewCall struct {
	mu    sync.Mutex
	asked bool
	ans   answerOf
}

// review asks RBAC about a with a SelfSubjectAccessReview (as the run's
// identity, impersonation included), once per question for the contexts
// that share ck's Reviews. A question naming its object is asked first of
// every object of its resource in its namespace (no name: RBAC answers
// "every name"): a rule without resourceNames, the common grant, then
// answers the questions of every context of the run at once, where the
// named question costs a review per inventory. Only a denial of that asks
// the named question, whose answer (a rule with resourceNames) decides.
func (ck *checker) review(ctx context.Context, a access) (allowed bool, why string, err error) {
	if a.name != "" {
		anyName := a
		anyName.name = ""
		if allowed, _, err := ck.reviewOnce(ctx, anyName); err != nil || allowed {
			return allowed, "", err
		}
	}
	return ck.reviewOnce(ctx, a)
}

// reviewOnce is review of exactly a.
func (ck *checker) reviewOnce(ctx context.Context, a access) (allowed bool, why string, err error) {
	v, _ := ck.reviews.calls.LoadOrStore(a, &reviewCall{})
	call := v.(*reviewCall)
	call.mu.Lock()
	defer call.mu.Unlock()
	if !call.asked {
		ans, err := ck.ask(ctx, a)
		if err != nil {
			return false, "", err
		}
		call.ans, call.asked = ans, true
	}
	return call.ans.allowed, call.ans.why, nil
}

// ask sends the access review of a.
func (ck *checker) ask(ctx context.Context, a access) (answerOf, error) {
	client, err := ck.accessReviews()
	if err != nil {
		return answerOf{}, err
	}
	ck.count(func(r *Result) { r.Reviews++ })
	sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.gr.Group,
			Resource: a.gr.Resource, Subresource: a.subresource, Name: a.name}}}
	got, err := client.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return answerOf{}, fmt.Errorf("asking RBAC whether it may %s %s: %w", a.verb, a.gr, err)
	}
	ans := answerOf{allowed: got.Status.Allowed && !got.Status.Denied}
	switch {
	case got.Status.Reason != "":
		ans.why = ": " + got.Status.Reason
	case got.Status.EvaluationError != "":
		ans.why = ": " + got.Status.EvaluationError
	}
	return ans, nil
}

// byRBAC judges a write that cannot be dry-run yet by RBAC alone; the
// cluster's admission judges it when the apply sends it.
func (ck *checker) byRBAC(ctx context.Context, ref v1alpha1.ObjectRef, verb string, gr schema.GroupResource, namespace string) error {
	a := access{verb: rbacVerb(verb), gr: gr, namespace: namespace}
	if verb != "create" {
		a.name = ref.Name
	}
	allowed, why, err := ck.review(ctx, a)
	if err != nil {
		return err
	}
	if !allowed {
		where := "cluster-wide"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		ck.refuse(ref, verb, fmt.Sprintf("RBAC does not allow this identity to %s %s %s (SelfSubjectAccessReview%s; asked of RBAC alone: %s)",
			rbacVerb(verb), gr, where, why, notYet(ref, namespace)))
		return nil
	}
	ck.count(func(r *Result) { r.ByRBAC = append(r.ByRBAC, ref) })
	return nil
}

// notYet says why a write was asked of RBAC alone.
func notYet(ref v1alpha1.ObjectRef, namespace string) string {
	if namespace != "" && ref.Namespace == namespace {
		return "its Namespace or its kind does not exist yet, or cli-utils fills it at apply time"
	}
	return "its kind does not exist yet, or cli-utils fills it at apply time"
}

// rbacVerb is RBAC's verb for a write: an update is a patch.
func rbacVerb(verb string) string {
	if verb == "update" {
		return "patch"
	}
	return verb
}
