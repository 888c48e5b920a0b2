// Package gitops hands a split to a GitOps engine (Flux, Argo CD, Config
// Sync): which of split's files each engine must not see, and the engine's
// own objects, generated from the ShardConfig, that make every cluster pull
// exactly its own directory of the split.
package gitops

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Engine is who applies each context's directory.
type Engine string

const (
	// Kpt is kpt live apply (split's default): each directory holds a
	// Kptfile and an inventory ResourceGroup.
	Kpt Engine = "kpt"
	// Flux is Flux's kustomize-controller, fed by a GitRepository.
	Flux Engine = "flux"
	// ArgoCD is Argo CD, one Application per context from an ApplicationSet.
	ArgoCD Engine = "argocd"
	// ConfigSync is Config Sync, one RootSync per cluster.
	ConfigSync Engine = "configsync"
)

// Engines are the engines split knows, in the order help lists them.
var Engines = []Engine{Kpt, Flux, ArgoCD, ConfigSync}

// ParseEngine reads --engine.
func ParseEngine(s string) (Engine, error) {
	for _, e := range Engines {
		if string(e) == s {
			return e, nil
		}
	}
	names := make([]string, len(Engines))
	for i, e := range Engines {
		names[i] = string(e)
	}
	return "", fmt.Errorf("unknown engine %q: --engine takes %s", s, strings.Join(names, ", "))
}

// Pulls reports whether the engine pulls from git (every engine but kpt).
func (e Engine) Pulls() bool { return e != "" && e != Kpt }

// Dir is the directory of OUT_DIR that holds the engine's own objects. A
// context cannot take this name (split refuses it), so it never collides.
const Dir = "_gitops"

// Default settings of the generated objects.
const (
	// DefaultInterval is how often the engines fetch and reconcile.
	DefaultInterval = 5 * time.Minute
	// Timeout bounds one Flux reconciliation (apply and wait): a finite
	// timeout makes a stuck cluster a failed Kustomization, not a hang.
	Timeout = 5 * time.Minute
	// FluxNamespace, ArgoCDNamespace and ConfigSyncNamespace are where each
	// engine keeps its objects by default.
	FluxNamespace       = "flux-system"
	ArgoCDNamespace     = "argocd"
	ConfigSyncNamespace = "config-management-system"
	// WaveLabel names the wave of each generated Argo CD Application, which
	// the RollingSync steps select.
	WaveLabel = "shardrouter.dev/wave"
)

// Source is the repository the engines pull the split from.
type Source struct {
	// URL is the repository's URL.
	URL string
	// Branch is the branch the engines follow.
	Branch string
	// Path is OUT_DIR's path inside the repository, "." for its root.
	Path string
	// Interval is how often the engines fetch and reconcile.
	Interval time.Duration
}

// Resolve completes src from the ShardConfig's spec.gitops where a flag
// left a field empty, then from the defaults; outDir finds Path when
// neither gives it.
func Resolve(src Source, spec *v1alpha1.GitOps, outDir string) (Source, error) {
	if spec != nil {
		if src.URL == "" {
			src.URL = spec.URL
		}
		if src.Branch == "" {
			src.Branch = spec.Branch
		}
		if src.Path == "" {
			src.Path = spec.Path
		}
		if src.Interval == 0 && spec.Interval != nil {
			src.Interval = spec.Interval.Duration
		}
	}
	if src.URL == "" {
		return src, errors.New("the engine needs the git repository it pulls from: give --gitops-url or spec.gitops.url")
	}
	if err := v1alpha1.ValidateRepoURL(src.URL); err != nil {
		return src, fmt.Errorf("the git repository URL %q: %w", src.URL, err)
	}
	if src.Branch == "" {
		src.Branch = v1alpha1.DefaultGitOpsBranch
	}
	if err := v1alpha1.ValidateBranch(src.Branch); err != nil {
		return src, fmt.Errorf("the git branch %q: %w", src.Branch, err)
	}
	if src.Path == "" {
		p, err := RepoPath(outDir)
		if err != nil {
			return src, err
		}
		src.Path = p
	}
	if err := v1alpha1.ValidateRepoPath(src.Path); err != nil {
		return src, fmt.Errorf("OUT_DIR's path in the repository %q: %w", src.Path, err)
	}
	src.Path = path.Clean(strings.TrimPrefix(src.Path, "./"))
	if src.Interval == 0 {
		src.Interval = DefaultInterval
	}
	if src.Interval < 0 {
		return src, fmt.Errorf("the interval %s must be positive", src.Interval)
	}
	return src, nil
}

// RepoPath is outDir's path relative to the git work tree that holds it
// (the nearest directory above with a .git).
func RepoPath(outDir string) (string, error) {
	abs, err := filepath.Abs(outDir)
	if err != nil {
		return "", err
	}
	for dir := abs; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			rel, err := filepath.Rel(dir, abs)
			if err != nil {
				return "", err
			}
			return filepath.ToSlash(rel), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("cannot tell where %s is in the git repository: it is not inside a git work tree; give --gitops-path or spec.gitops.path (OUT_DIR's path from the repository's root)", outDir)
		}
		dir = up
	}
}

// ContextDir is the repository path of one context's directory.
func (s Source) ContextDir(ctx string) string {
	return path.Join(s.Path, ctx)
}
