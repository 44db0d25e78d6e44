package harness

// Verbs of a scheduler extender, in the order of the table.
const (
	VerbFilter     = "filter"
	VerbPrioritize = "prioritize"
	VerbBind       = "bind"
)

// ExtenderVerbs are the verbs in the order of the tables.
func ExtenderVerbs() []string { return []string{VerbFilter, VerbPrioritize, VerbBind} }
