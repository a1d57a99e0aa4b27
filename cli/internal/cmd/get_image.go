package cmd

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
)

// The image kinds' get tables have Flux's columns (`flux get images`),
// read from image-controller's status fields, with the tag count of the
// last scan and the last pushed commit besides. Times are RFC 3339, as
// Flux prints them: the moment of the scan or run, not its age.

var (
	imageRepositoryColumns = []column{
		{header: "LAST SCAN", cell: func(o client.Object, _ status, _ time.Time) string {
			if r := o.(*imagev1.ImageRepository).Status.LastScanResult; r != nil {
				return timestamp(&r.ScanTime)
			}
			return "-"
		}},
		{header: "TAGS", cell: func(o client.Object, _ status, _ time.Time) string {
			if r := o.(*imagev1.ImageRepository).Status.LastScanResult; r != nil {
				return strconv.Itoa(r.TagCount)
			}
			return "-"
		}},
		suspendedColumn, readyColumn, plainMessageColumn,
	}
	imagePolicyColumns = []column{
		{header: "IMAGE", cell: func(o client.Object, _ status, _ time.Time) string {
			if l := o.(*imagev1.ImagePolicy).Status.LatestRef; l != nil {
				return l.Name
			}
			return "-"
		}},
		{header: "TAG", cell: func(o client.Object, _ status, _ time.Time) string {
			if l := o.(*imagev1.ImagePolicy).Status.LatestRef; l != nil {
				return l.Tag
			}
			return "-"
		}},
		readyColumn, messageColumn,
	}
	imageUpdateColumns = []column{
		{header: "LAST RUN", cell: func(o client.Object, _ status, _ time.Time) string {
			return timestamp(o.(*imagev1.ImageUpdateAutomation).Status.LastAutomationRunTime)
		}},
		{header: "LAST PUSH COMMIT", cell: func(o client.Object, _ status, _ time.Time) string {
			return orDash(o.(*imagev1.ImageUpdateAutomation).Status.LastPushCommit)
		}},
		suspendedColumn, readyColumn, plainMessageColumn,
	}
)

// timestamp is t in RFC 3339, "-" for none.
func timestamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// imageRepositoryReport is what a reconciled ImageRepository's scan found.
func imageRepositoryReport(o client.Object) string {
	r := o.(*imagev1.ImageRepository).Status.LastScanResult
	if r == nil {
		return "no scan yet"
	}
	return fmt.Sprintf("scan found %d tags", r.TagCount)
}

// imagePolicyReport is the image a reconciled ImagePolicy chose.
func imagePolicyReport(o client.Object) string {
	l := o.(*imagev1.ImagePolicy).Status.LatestRef
	if l == nil {
		return "no image chosen yet"
	}
	return "latest image " + l.String()
}

// imageUpdateReport says whether the automation's run pushed a commit: it
// did when the push is the run's (image-controller stamps both with the
// same time), else the repository was up to date.
func imageUpdateReport(o client.Object) string {
	st := o.(*imagev1.ImageUpdateAutomation).Status
	switch {
	case st.LastPushCommit == "":
		return "repository up to date, no commit pushed yet"
	case st.LastPushTime != nil && st.LastAutomationRunTime != nil && st.LastPushTime.Equal(st.LastAutomationRunTime):
		return "pushed commit " + st.LastPushCommit
	}
	return "repository up to date, last push commit " + st.LastPushCommit
}
