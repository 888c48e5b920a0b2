// Package golden holds what the golden-file tests share. Golden files do not
// carry exact capacity byte counts: those are an estimate with tests of
// their own (pkg/function/size_test.go, capacity_test.go), and a change to
// the estimate would otherwise rewrite every golden file.
package golden

import "regexp"

var (
	// "1695 bytes (1.7 KiB, 55.5%)", "664 bytes (21.7%)", "664 bytes"
	bytesText = regexp.MustCompile(`\b\d+ bytes( \([^)]*\))?`)
	// the tags of a capacity result: bytes: "1695"
	bytesTag = regexp.MustCompile(`(?m)^(\s+bytes: )"\d+"$`)
	// where a ResourceList's results start
	resultsKey = regexp.MustCompile(`(?m)^results:$`)
)

// Mask is what golden files hold in place of a byte count.
const Mask = "<bytes>"

// MaskBytes replaces the capacity byte counts of a function's output (its
// results' messages and bytes tags) with Mask.
func MaskBytes(s string) string {
	s = bytesText.ReplaceAllString(s, Mask)
	return bytesTag.ReplaceAllString(s, `${1}"`+Mask+`"`)
}

// MaskResultBytes masks the byte counts of a ResourceList's results only,
// so that the items (user data) are compared exactly.
func MaskResultBytes(resourceList string) string {
	i := resultsKey.FindStringIndex(resourceList)
	if i == nil {
		return resourceList
	}
	return resourceList[:i[0]] + MaskBytes(resourceList[i[0]:])
}
