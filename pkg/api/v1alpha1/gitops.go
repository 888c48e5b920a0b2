package v1alpha1

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GitOps is where a GitOps engine (Flux, Argo CD, Config Sync) finds the
// split: the repository that a CI job commits OUT_DIR to.
type GitOps struct {
	// URL is the repository's http://, https:// or ssh:// URL.
	URL string `json:"url,omitempty"`
	// Branch is the branch the engines follow (default "main").
	Branch string `json:"branch,omitempty"`
	// Path is OUT_DIR's path inside the repository (default: found from the
	// .git directory above OUT_DIR).
	Path string `json:"path,omitempty"`
	// Interval is how often the engines fetch the repository and reconcile
	// (default 5m).
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// DefaultGitOpsBranch is the branch the engines follow unless told.
const DefaultGitOpsBranch = "main"

// Validate checks each field that is set.
func (g *GitOps) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.URL != "" {
		if err := ValidateRepoURL(g.URL); err != nil {
			errs = append(errs, field.Invalid(p.Child("url"), g.URL, err.Error()))
		}
	}
	if g.Branch != "" {
		if err := ValidateBranch(g.Branch); err != nil {
			errs = append(errs, field.Invalid(p.Child("branch"), g.Branch, err.Error()))
		}
	}
	if g.Path != "" {
		if err := ValidateRepoPath(g.Path); err != nil {
			errs = append(errs, field.Invalid(p.Child("path"), g.Path, err.Error()))
		}
	}
	if g.Interval != nil && g.Interval.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("interval"), g.Interval.Duration.String(), "must be positive"))
	}
	return errs
}

// ValidateRepoURL checks a repository URL as Flux's GitRepository takes it
// (^(http|https|ssh)://), with a host.
func ValidateRepoURL(s string) error {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("must not contain whitespace or control characters")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh" {
		return fmt.Errorf("must be an http://, https:// or ssh:// URL such as https://git.example.com/fleet.git")
	}
	if u.Hostname() == "" {
		return fmt.Errorf("must name a host, as in https://git.example.com/fleet.git")
	}
	return nil
}

// ValidateBranch checks a branch name against git's rules for refs that
// matter here (git check-ref-format).
func ValidateBranch(s string) error {
	switch {
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("must not contain whitespace or control characters")
	case strings.ContainsAny(s, `~^:?*[\`) || strings.Contains(s, "..") || strings.Contains(s, "@{"):
		return fmt.Errorf(`not a git branch name: must not contain '~', '^', ':', '?', '*', '[', '\', '..' or '@{'`)
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".lock") || strings.HasPrefix(s, "-"):
		return fmt.Errorf("not a git branch name")
	}
	return nil
}

// ValidateRepoPath checks OUT_DIR's path inside the repository: relative,
// clean, and inside it.
func ValidateRepoPath(s string) error {
	c := path.Clean(strings.TrimPrefix(s, "./"))
	switch {
	case strings.HasPrefix(s, "/"):
		return fmt.Errorf("must be relative to the repository's root")
	case c == ".." || strings.HasPrefix(c, "../"):
		return fmt.Errorf("must be inside the repository")
	case strings.ContainsAny(s, `\`) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("must not contain '\\', whitespace or control characters")
	}
	return nil
}
