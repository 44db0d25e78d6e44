package draclaims

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// qualified is an attribute's fully qualified name, for constraints.
func qualified(name resourceapi.QualifiedName) resourceapi.FullyQualifiedName {
	return resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(name))
}

// attribute and capacityOf are CEL references to a device's attribute
// and capacity in the driver's domain.
func attribute(name resourceapi.QualifiedName) string {
	return fmt.Sprintf("device.attributes[%q].%s", gpuv1alpha1.DRADriverName, name)
}

func capacityOf(name resourceapi.QualifiedName) string {
	return fmt.Sprintf("device.capacity[%q].%s", gpuv1alpha1.DRADriverName, name)
}

// capacityIs is a CEL condition that the device's capacity equals q.
func capacityIs(name resourceapi.QualifiedName, q string) string {
	return fmt.Sprintf("%s.compareTo(quantity(%q)) == 0", capacityOf(name), q)
}

// isMIG is a CEL condition that the device is a MIG instance.
func isMIG() string {
	return fmt.Sprintf("%q in device.attributes[%q]", gpuv1alpha1.DRAAttributeMIGProfile, gpuv1alpha1.DRADriverName)
}

// isMadeOnDemand is a CEL condition that the device is a MIG instance
// of a GPU whose instances are made on demand.
func isMadeOnDemand() string {
	return fmt.Sprintf("%q in device.attributes[%q]", gpuv1alpha1.DRAAttributeMIGStart, gpuv1alpha1.DRADriverName)
}

// modeSelector keeps a request to the devices the pod's GPU mode allows,
// as placement does: in MIG mode MIG instances, in hami-core mode no MIG
// instance. Where GPUs make their instances on demand (dynamic), a pod in
// MIG mode gets the instances the administrator laid out (those made on
// demand have subrequests of their own, see withMIGMadeOnDemand), and one
// that names no mode no instance made on demand, since a GPU that makes
// them serves pods in MIG mode only; elsewhere there are none to keep
// off, and the claims stay as they were. A pod that names profiles has
// its selector from celSelectors.
func modeSelector(sel gpurequest.Selection, dynamic bool) []resourceapi.DeviceSelector {
	notMadeOnDemand := "!(" + isMadeOnDemand() + ")"
	var expression string
	switch {
	case len(sel.MIGProfiles) > 0:
		return nil
	case sel.Mode == gpurequest.ModeMIG && dynamic:
		expression = isMIG() + " && " + notMadeOnDemand
	case sel.Mode == gpurequest.ModeMIG:
		expression = isMIG()
	case sel.Mode == gpurequest.ModeShared:
		expression = "!(" + isMIG() + ")"
	case dynamic:
		expression = notMadeOnDemand
	default:
		return nil
	}
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expression}}}
}

// celSelectors turns the pod's type, UUID and MIG profile annotations
// into CEL selectors with the extender's meaning: a model contains one of
// the types (case-insensitive) and none of the excluded; a UUID is one of
// the allowed and none of the excluded (case-insensitive); a MIG instance
// has one of the profiles, and is laid out by the administrator where
// GPUs make their instances on demand (dynamic). Values were
// checked by gpurequest.ParseAnnotations: printable, no white space. An
// error names the key of annotations the pod wrote, Tessera's or HAMi's.
func celSelectors(annotations map[string]string, sel gpurequest.Selection, dynamic bool) ([]resourceapi.DeviceSelector, field.ErrorList) {
	model := attribute(gpuv1alpha1.DRAAttributeModel) + ".lowerAscii()"
	uuid := attribute(gpuv1alpha1.DRAAttributeUUID) + ".lowerAscii()"
	hasMIG := isMIG()
	contains := func(values []string) string {
		terms := make([]string, 0, len(values))
		for _, v := range values {
			terms = append(terms, fmt.Sprintf("%s.contains(%s)", model, strconv.Quote(v)))
		}
		return "(" + strings.Join(terms, " || ") + ")"
	}
	in := func(ref string, values []string) string {
		quoted := make([]string, 0, len(values))
		for _, v := range values {
			quoted = append(quoted, strconv.Quote(strings.ToLower(v)))
		}
		return ref + " in [" + strings.Join(quoted, ", ") + "]"
	}
	type term struct{ annotation, expression string }
	var terms []term
	if len(sel.Types) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUType, contains(sel.Types)})
	}
	if len(sel.ExcludeTypes) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUTypeExclude, "!" + contains(sel.ExcludeTypes)})
	}
	if len(sel.UUIDs) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUUUID, in(uuid, sel.UUIDs)})
	}
	if len(sel.ExcludeUUIDs) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUUUIDExclude, "!(" + in(uuid, sel.ExcludeUUIDs) + ")"})
	}
	if len(sel.MIGProfiles) > 0 {
		laidOut := hasMIG
		if dynamic {
			laidOut += " && !(" + isMadeOnDemand() + ")"
		}
		terms = append(terms, term{gpurequest.AnnotationMIGProfile, laidOut + " && " + in(attribute(gpuv1alpha1.DRAAttributeMIGProfile)+".lowerAscii()", sel.MIGProfiles)})
	}
	var (
		out  []resourceapi.DeviceSelector
		errs field.ErrorList
	)
	path := field.NewPath("metadata", "annotations")
	for _, t := range terms {
		if len(t.expression) > resourceapi.CELSelectorExpressionMaxLength {
			errs = append(errs, field.Forbidden(path.Key(gpurequest.WrittenKey(annotations, t.annotation)), fmt.Sprintf(
				"in DRA mode the list becomes a CEL selector of at most %d characters, and this one would have %d: list fewer entries",
				resourceapi.CELSelectorExpressionMaxLength, len(t.expression))))
			continue
		}
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: t.expression}})
	}
	return out, errs
}
