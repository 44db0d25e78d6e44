package harness

// Verbs of a scheduler extender, in the order of the table.
const (
	VerbFilter     = "filter"
	VerbPrioritize = "prioritize"
	VerbBind       = "bind"
)

func ExtenderVerbs() []string { return []string{VerbFilter, VerbPrioritize, VerbBind} }
