package main

// Verbs of a scheduler extender, in the order of the table.
const (
	verbFilter     = "filter"
	verbPrioritize = "prioritize"
	verbBind       = "bind"
)

func extenderVerbs() []string { return []string{verbFilter, verbPrioritize, verbBind} }
