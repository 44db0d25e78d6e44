package gpurequest

// AnnotationKeys returns every annotation key ParseAnnotations reads: the
// Tessera keys and their HAMi aliases. It lets a caller keep only these
// keys of a pod, for example to trim pods held in an informer's cache.
func AnnotationKeys() []string {
	keys := make([]string, 0, 2*len(annotationAliases))
	for key, alias := range annotationAliases {
		keys = append(keys, key)
		if alias != "" {
			keys = append(keys, alias)
		}
	}
	return keys
}
